// Developer check (not part of the library): ulp error of vmath.h against libm's
// double-precision functions over every STEP-th float32 bit pattern (STEP=1: all
// 2^32), plus ns/element over 1M floats. Build and run from the repo root:
//   g++ -O3 -ffp-contract=off -fno-math-errno -fno-trapping-math -std=c++17 \
//       -Icpp/kernels cpp/kernels/dev/ulp_check.cc -o /tmp/ulp_check && /tmp/ulp_check 61
#include "vmath.h"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <vector>
using namespace minpy_kernels::vm;
#define TC __attribute__((target_clones("avx512f","avx2","default")))
TC void f_exp(const float* a, float* d, long n){for(long i=0;i<n;++i)d[i]=exp_f(a[i]);}
TC void f_log(const float* a, float* d, long n){for(long i=0;i<n;++i)d[i]=log_f(a[i]);}
TC void f_tanh(const float* a, float* d, long n){for(long i=0;i<n;++i)d[i]=tanh_f(a[i]);}
TC void f_sig(const float* a, float* d, long n){for(long i=0;i<n;++i)d[i]=sigmoid_f(a[i]);}
TC void f_sr(const float* a, float* d, long n){for(long i=0;i<n;++i)d[i]=softrelu_f(a[i]);}
double r_exp(double x){return std::exp(x);} double r_log(double x){return std::log(x);}
double r_tanh(double x){return std::tanh(x);} double r_sig(double x){return 1.0/(1.0+std::exp(-x));}
double r_sr(double x){return x>20? x : std::log1p(std::exp(x));}
double ulp_err(float y, double ref){
  if (std::isnan(ref)) return std::isnan(y)?0:1e9;
  if (std::isnan(y)) return 1e9;
  float rf=(float)ref;
  if (std::isinf(rf)) { if (y==rf) return 0; ref = std::copysign(3.4028234663852886e38, ref); }
  if (std::isinf(y)) return 1e9;
  int e; std::frexp(ref==0?1e-300:ref,&e); // ref = m*2^e, m in [0.5,1)
  int ex = e-1; if (ex < -126) ex = -126;
  double ulp = std::ldexp(1.0, ex-23);
  return std::fabs((double)y-ref)/ulp;
}
int main(int argc,char**argv){
  long step = argc>1? atol(argv[1]) : 1;
  const char* names[]={"exp","log","tanh","sigmoid","softrelu"};
  void (*fs[])(const float*,float*,long)={f_exp,f_log,f_tanh,f_sig,f_sr};
  double (*rs[])(double)={r_exp,r_log,r_tanh,r_sig,r_sr};
  const long B=1<<16; std::vector<float> a(B), d(B);
  const char* only = argc>2? argv[2] : nullptr;  // e.g. "tanh": check one function
  for(int k=0;k<5;++k){
    if (only && strcmp(only, names[k])) continue;
    double maxe=0; float worst=0; long cnt=0, over1=0;
    unsigned long u=0;
    while(u < (1ul<<32)){
      long n=0; for(;n<B && u<(1ul<<32); ++n, u+=step){unsigned v=(unsigned)u; float x; memcpy(&x,&v,4); a[n]=x;}
      fs[k](a.data(),d.data(),n);
      for(long i=0;i<n;++i){ double e=ulp_err(d[i], rs[k]((double)a[i])); cnt++; if(e>1) over1++; if(e>maxe){maxe=e;worst=a[i];} }
    }
    printf("%-8s checked %ld floats: max err %.3f ulp at x=%a (%g); >1ulp: %ld\n",names[k],cnt,maxe,worst,worst,over1);
  }
  // speed over 1M floats in [-5,5]
  long N=1<<20; std::vector<float> x(N), y(N); for(long i=0;i<N;++i) x[i]=(float)((i*2654435761u%1000000)/100000.0-5.0);
  for(int k=0;k<5;++k){ auto t0=std::chrono::steady_clock::now(); for(int r=0;r<20;++r) fs[k](x.data(),y.data(),N);
    double dt=std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count()/20; printf("%-8s %.3f ns/elem\n",names[k],dt/N*1e9);}
}
