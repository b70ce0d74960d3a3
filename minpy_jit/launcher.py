"""Start a distributed MXNet job (ps-lite scheduler, servers, workers) and supervise it.

    python -m minpy_jit.launcher -n 2 -s 1 python train.py --kvstore dist_sync
    python -m minpy_jit.launcher -n 4 -s 2 -H hosts python train.py ...     # over ssh

It does what MXNet's `tools/launch.py` does -- servers and workers run the same command,
told their role by the `DMLC_*` environment variables, and `import mxnet` turns the server
processes into their service loops -- with these differences:

* local jobs use loopback explicitly (`DMLC_PS_ROOT_URI=127.0.0.1`,
  `DMLC_INTERFACE=lo`); MXNet's launcher picks an address itself, and its tracker
  calls `Thread.isAlive`, which Python 3.9 removed, so it fails on current Pythons;
* it watches the processes: when one of them exits with an error or is killed,
  the others would wait for it forever inside ps-lite, so they are stopped, and the
  job ends with an error that names the process that died;
* `timeout` bounds the whole job; every process is cleaned up on every exit path
  (each runs in its own process group, and gets SIGTERM if the launcher dies);
* the scheduler makes the two C API calls `import mxnet` would make for it, without
  importing mxnet's Python package (`scheduler_runs_command=True` runs the command).

Each output line is prefixed with the role and rank of the process that wrote it.
"""
import argparse
import ctypes
import faulthandler
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time

ROLES = ("scheduler", "server", "worker")

# The scheduler only introduces the other processes to each other: MXNet's own path for it
# (`import mxnet` with DMLC_ROLE=scheduler) creates a 'dist' kvstore and runs its server loop,
# which for a scheduler is ps-lite's rendezvous. This does the same two C API calls without
# importing mxnet's Python package (0.2 s instead of ~1.5 s of CPU on a 2-core machine).
LEAN_SCHEDULER = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1], ctypes.RTLD_LOCAL)
handle = ctypes.c_void_p()
controller = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)(lambda *args: None)
if lib.MXKVStoreCreate(b"dist", ctypes.byref(handle)) or lib.MXKVStoreRunServer(handle, controller, None):
    lib.MXGetLastError.restype = ctypes.c_char_p
    sys.exit("scheduler: " + lib.MXGetLastError().decode())
"""


def libmxnet_path():
    from mxnet.libinfo import find_lib_path
    return find_lib_path()[0]


class JobFailed(RuntimeError):
    """A process of the job failed or the job timed out; `.result` has the details."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result


class JobResult:
    """How a job ended: `returncode` (0 = every worker succeeded), `error` (None or why
    not), `output` (role name -> list of its output lines, when captured)."""

    def __init__(self):
        self.returncode = 0
        self.error = None
        self.output = {}

    def lines(self, name):
        return self.output.get(name, [])


def free_port(host="127.0.0.1"):
    """A TCP port nobody listens on right now (the scheduler binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def outgoing_address():
    """This machine's address on the interface that routes outward: what other hosts reach."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))  # no packet is sent: this only picks a route
            return s.getsockname()[0]
        except OSError:
            return "127.0.0.1"


def job_env(num_workers, num_servers, root_uri, port, interface=None):
    """The variables ps-lite reads, common to every process of the job."""
    env = {
        "DMLC_PS_ROOT_URI": root_uri,
        "DMLC_PS_ROOT_PORT": str(port),
        "DMLC_NUM_WORKER": str(num_workers),
        "DMLC_NUM_SERVER": str(num_servers),
    }
    if interface:
        env["DMLC_INTERFACE"] = interface
    return env


def _die_with_parent():
    """preexec_fn: SIGTERM this child when the launcher dies (Linux prctl PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: the launcher's own cleanup still applies
        pass


class _Process:
    def __init__(self, name, role, argv, env, capture):
        self.name, self.role = name, role
        self.lines = []
        self.popen = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, preexec_fn=_die_with_parent)
        self.reader = threading.Thread(target=self._read, args=(capture,), daemon=True)
        self.reader.start()

    def _read(self, capture):
        prefix = "[%s] " % self.name
        for raw in iter(self.popen.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append(line)
            if not capture:
                sys.stdout.write(prefix + line + "\n")
                sys.stdout.flush()
        self.popen.stdout.close()

    def poll(self):
        return self.popen.poll()

    def signal(self, sig):
        """Signals the process group (the command may be a shell with children)."""
        try:
            os.killpg(self.popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _describe_exit(code):
    if code < 0:
        try:
            return "was killed by %s" % signal.Signals(-code).name
        except ValueError:
            return "was killed by signal %d" % -code
    return "exited with status %d" % code


class Job:
    """A running job; `wait()` supervises it. Use `run()` unless you need the handle."""

    def __init__(self, command, num_workers, num_servers=None, hosts=None, env=None, root_uri=None, port=None,
                 interface=None, ssh=("ssh", "-o", "StrictHostKeyChecking=no", "-o", "BatchMode=yes"),
                 capture=False, cwd=None, scheduler_runs_command=False):
        if isinstance(command, str):
            command = shlex.split(command)
        if not command:
            raise ValueError("no command to run")
        if num_workers < 1:
            raise ValueError("num_workers must be at least 1, got %r" % (num_workers,))
        num_servers = num_workers if num_servers is None else num_servers
        if num_servers < 1:
            raise ValueError("num_servers must be at least 1 (ps-lite needs a server), got %r" % (num_servers,))
        local = not hosts
        if local:
            root_uri = root_uri or "127.0.0.1"
            interface = interface or "lo"
        else:
            root_uri = root_uri or outgoing_address()
        port = port or free_port("127.0.0.1" if local else "")
        common = dict(os.environ)
        common.update(env or {})
        common.update(job_env(num_workers, num_servers, root_uri, port, interface))
        cwd = cwd or os.getcwd()
        plan = [("scheduler", "scheduler", 0)]
        plan += [("server", "server %d" % i, i) for i in range(num_servers)]
        plan += [("worker", "worker %d" % i, i) for i in range(num_workers)]
        self.processes = []
        try:
            for n, (role, name, index) in enumerate(plan):
                penv = dict(common, DMLC_ROLE=role, DMLC_TASK_ID=str(index), DMLC_JOB_CLUSTER="local")
                if local:
                    penv["DMLC_NODE_HOST"] = root_uri
                if role == "scheduler":  # the scheduler runs here in both modes
                    argv = list(command) if scheduler_runs_command else [
                        sys.executable, "-c", LEAN_SCHEDULER, libmxnet_path()]
                elif local:
                    argv = list(command)
                else:
                    argv = self._ssh_argv(ssh, hosts, n, penv, command, cwd, env, root_uri)
                self.processes.append(_Process(name, role, argv, penv, capture))
        except BaseException:
            self.stop()
            raise

    @staticmethod
    def _ssh_argv(ssh, hosts, n, penv, command, cwd, extra_env, root_uri):
        """Servers and workers round-robin over the hosts, each started through ssh with the
        job's variables exported (the scheduler runs here, where DMLC_PS_ROOT_URI points)."""
        host = hosts[(n - 1) % len(hosts)]
        names = sorted(set(job_env(1, 1, root_uri, 0)) | {"DMLC_ROLE", "DMLC_TASK_ID", "DMLC_INTERFACE"} |
                       set(extra_env or {}))
        exports = " ".join("%s=%s" % (k, shlex.quote(penv[k])) for k in names if k in penv)
        remote = "cd %s && env %s %s" % (shlex.quote(cwd), exports, " ".join(shlex.quote(c) for c in command))
        return list(ssh) + [host, remote]

    def stop(self, grace=3.0):
        """SIGTERM every process still running, SIGKILL what is left after `grace` seconds."""
        running = [p for p in self.processes if p.poll() is None]
        for p in running:
            p.signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for p in running:
            try:
                p.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.signal(signal.SIGKILL)
                try:
                    p.popen.wait(timeout=grace)
                except subprocess.TimeoutExpired:  # stuck in the kernel: reported, never waited for
                    sys.stderr.write("minpy_jit.launcher: %s (pid %d) survived SIGKILL\n" % (p.name, p.popen.pid))
        for p in self.processes:
            p.reader.join(timeout=1.0)

    def wait(self, timeout=None, linger=15.0, poll=0.05):
        """Supervises until every worker has exited. A failed process (any role) stops the
        rest at once. After the workers succeed, the scheduler and servers get `linger`
        seconds to shut down on their own (ps-lite stops them) before they are stopped."""
        result = JobResult()
        start = time.monotonic()
        workers = [p for p in self.processes if p.role == "worker"]
        workers_done = start
        try:
            while True:
                failed = next((p for p in self.processes if p.poll() not in (None, 0)), None)
                if failed is not None:
                    others = [p.name for p in self.processes if p is not failed and p.poll() is None]
                    result.returncode = 1
                    result.error = "%s (pid %d) %s; stopped the others (%s)" % (
                        failed.name, failed.popen.pid, _describe_exit(failed.poll()), ", ".join(others) or "none left")
                    break
                finished = all(p.poll() is not None for p in workers)
                if finished:
                    if all(p.poll() is not None for p in self.processes):
                        break
                    if linger is not None and time.monotonic() - workers_done > linger:
                        break  # servers that do not stop by themselves are stopped below (not a failure)
                else:
                    workers_done = time.monotonic()
                if timeout is not None and time.monotonic() - start > timeout:
                    left = [p.name for p in self.processes if p.poll() is None]
                    result.returncode = 124
                    result.error = "timed out after %.0f s; still running: %s" % (timeout, ", ".join(left))
                    break
                time.sleep(poll)
        finally:
            self.stop()
            result.output = {p.name: p.lines for p in self.processes}
        return result


def run(command, num_workers=2, num_servers=1, timeout=None, check=True, **kw):
    """Runs a job to the end; returns its JobResult (raises JobFailed if check and it failed).

        result = minpy_jit.launcher.run([sys.executable, "train.py"], num_workers=2,
                                        num_servers=1, timeout=120, capture=True)
        print(result.lines("worker 0"))
    """
    result = Job(command, num_workers, num_servers, **kw).wait(timeout=timeout)
    if check and result.error:
        raise JobFailed("distributed job failed: " + result.error, result)
    return result


def read_hosts(path):
    """Host names from a hosts file: one per line, '#' comments and blank lines ignored."""
    with open(path) as f:
        hosts = [line.split("#")[0].strip() for line in f]
    hosts = [h for h in hosts if h]
    if not hosts:
        raise ValueError("hosts file %s names no host" % path)
    return hosts


class _Stopped(BaseException):
    """The launcher got SIGINT or SIGTERM (raised by its handler)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m minpy_jit.launcher",
        description="Launch a distributed MXNet job (scheduler, servers, workers) and supervise it.")
    parser.add_argument("-n", "--num-workers", type=int, required=True, help="worker processes")
    parser.add_argument("-s", "--num-servers", type=int, help="server processes (default: as many as workers)")
    parser.add_argument("-H", "--hostfile", help="run servers and workers on these hosts over ssh "
                        "(one host per line); without it every process runs on this machine on loopback")
    parser.add_argument("--timeout", type=float, help="stop the whole job after this many seconds")
    parser.add_argument("--root-uri", help="address of the scheduler (default: 127.0.0.1 locally, "
                        "this machine's outward address with -H)")
    parser.add_argument("--port", type=int, help="scheduler port (default: a free one)")
    parser.add_argument("--interface", help="DMLC_INTERFACE for every process (default: lo locally; "
                        "with -H ps-lite picks each host's first non-loopback interface)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="extra environment variable for every process (repeatable)")
    parser.add_argument("--ssh", default="ssh -o StrictHostKeyChecking=no -o BatchMode=yes",
                        help="the ssh command used with -H")
    parser.add_argument("--scheduler-runs-command", action="store_true",
                        help="run the command as the scheduler too, as MXNet's launcher does (default: "
                        "the scheduler is started without importing mxnet's Python package)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command every process runs")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    extra = dict(kv.split("=", 1) for kv in args.env)
    hosts = read_hosts(args.hostfile) if args.hostfile else None

    # Installed before the first process starts: a signal that arrives while Job() is still
    # starting them (a loaded machine) must stop the job too, not kill the launcher outright.
    def on_signal(signum, _frame):
        raise _Stopped(signum)  # Job() and Job.wait() stop every process they started on the way out
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        job = Job(command, args.num_workers, args.num_servers, hosts=hosts, env=extra, root_uri=args.root_uri,
                  port=args.port, interface=args.interface, ssh=shlex.split(args.ssh),
                  scheduler_runs_command=args.scheduler_runs_command)
        result = job.wait(timeout=args.timeout)
    except _Stopped as stopped:
        return 128 + stopped.signum
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if result.error:
        sys.stderr.write("minpy_jit.launcher: %s\n" % result.error)
    return result.returncode


if __name__ == "__main__":
    # SIGUSR1 prints where every thread of the launcher is (for a launcher that seems stuck).
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Out without the interpreter's and libmxnet.so's exit handlers: importing the package loads
    # MXNet, whose fork handlers (one fork per process started) create and restart its engine here,
    # and nothing here needs an orderly engine shutdown. The launcher once outlived its SIGTERM by
    # more than 30 s in a loaded full test run (test_the_processes_stop_when_the_launcher_dies);
    # where it waited was not caught, and the exit path is the part of it that is not ours.
    os._exit(code)
