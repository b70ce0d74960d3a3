"""Distributed training through MXNet's kvstore (ps-lite), under jit() in every worker.

Each test starts a real job on loopback with minpy_jit.launcher -- a scheduler, one or two
servers and two workers, each a separate Python process running tests/dist_worker.py --
and bounds it with a timeout. dist_sync must give exactly the weights of the same training
done eagerly in one process on two contexts (the servers sum the two workers' gradients as
a local kvstore sums two contexts'); dist_async is checked by what holds whatever order the
servers apply the pushes in. The failure tests kill a process mid-training or make one fail:
the job must end with an error naming it, within the timeout, with no process left behind.
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon, nd

import dist_worker
from minpy_jit import launcher

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TIMEOUT = 120  # seconds for a whole job: four Python processes each importing mxnet on 2 cores


def _env():
    path = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": ROOT + (os.pathsep + path if path else ""), "OMP_NUM_THREADS": "1"}


def _job(out_dir, *args, servers=1, command=None, **kw):
    command = command or [sys.executable, os.path.join(HERE, "dist_worker.py"), "--out", str(out_dir)] + list(args)
    try:
        return launcher.Job(command, num_workers=2, num_servers=servers, env=_env(), capture=True, **kw)
    except OSError as e:  # pragma: no cover - a sandbox that forbids starting processes
        pytest.skip("cannot start the job's processes: %s" % e)


def _run(out_dir, *args, servers=1, c_updater=None):
    """The job's two workers' saved arrays; c_updater: whether every server must (True) or
    must not (False) have replaced MXNet's Python Updater by ours (server_updates.py). With
    --eager among args the workers run no jit() scope (MXNet alone)."""
    result = _job(out_dir, *args, servers=servers).wait(timeout=TIMEOUT)
    assert result.error is None, "%s\n%s" % (result.error, "\n".join(
        "[%s] %s" % (name, line) for name, lines in result.output.items() for line in lines[-20:]))
    steps = int(args[args.index("--steps") + 1])
    for name in ("worker 0", "worker 1"):
        if "--eager" not in args:
            _check_compiled(json.loads(result.lines(name)[-1]), steps)
    if c_updater is not None:
        for s in range(servers):
            lines = result.lines("server %d" % s)
            assert any("server runs the C updater for " in l for l in lines) == c_updater, lines
    return [np.load(os.path.join(str(out_dir), "worker%d.npz" % r)) for r in range(2)]


def _check_compiled(stats, steps, params=4):
    """A worker's jit() statistics: each step ran a compiled graph (not an eager replay), all
    cache hits after the second step, and each step pushed every parameter's gradient."""
    assert stats["executions"] >= steps and stats["eager_replays"] == 0, stats
    assert stats["misses_after_step_2"] == 0, stats
    assert stats["kvstore"]["calls"]["pushpull"] == steps * params, stats


def _arrays(npz, first, count):
    return [npz["arr_%d" % i] for i in range(first, first + count)]


def _reference(steps, update_on_kvstore, momentum=0.0, contexts=2, optimizer="sgd"):
    """The same training eagerly in this process: one context for each context of each
    worker, each taking its part of every batch, gradients summed by a local kvstore."""
    ctx = [mx.cpu(i) for i in range(contexts)]
    net = dist_worker.make_net(ctx)
    kw = {"learning_rate": 0.1}
    if momentum:
        kw["momentum"] = momentum
    trainer = gluon.Trainer(net.collect_params(), optimizer, kw, kvstore="local", update_on_kvstore=update_on_kvstore)
    lossfn = gluon.loss.SoftmaxCrossEntropyLoss()
    part = dist_worker.BATCH // contexts
    for x, y in dist_worker.batches(steps):
        xs = [nd.array(x[i * part:(i + 1) * part], ctx=c) for i, c in enumerate(ctx)]
        ys = [nd.array(y[i * part:(i + 1) * part], ctx=c) for i, c in enumerate(ctx)]
        with autograd.record():
            losses = [lossfn(net(a), b) for a, b in zip(xs, ys)]
        for loss in losses:
            loss.backward()
        trainer.step(dist_worker.BATCH)
    return [p.data(ctx[0]).asnumpy() for p in net.collect_params().values()]


@pytest.mark.parametrize("optimizer,momentum", [("sgd", 0.9), ("adam", 0.0)], ids=["sgd-momentum", "adam"])
def test_dist_sync_two_workers_equal_eager_training(tmp_path, optimizer, momentum):
    """dist_sync, optimizer on the server (the Trainer's default): each worker's forward and
    backward run as compiled graphs, the server runs SGD with momentum (or Adam) as our C
    updater (the kvstore is set up by the first trainer.step, inside jit()); the weights equal
    eager's (MXNet's own Updater in one process) bit for bit."""
    args = ["--kvstore", "dist_sync", "--steps", "4", "--optimizer", optimizer]
    if momentum:
        args += ["--momentum", str(momentum)]
    workers = _run(tmp_path, *args, c_updater=True)
    want = _reference(4, update_on_kvstore=True, momentum=momentum, optimizer=optimizer)
    for w in workers:
        for got, ref in zip(_arrays(w, 0, len(want)), want):
            np.testing.assert_array_equal(got, ref)


def test_dist_sync_update_on_workers_two_servers(tmp_path):
    """dist_sync with update_on_kvstore=False and two servers: the servers sum gradients,
    each worker runs the update itself, inside its jit() scope; the weights equal eager's in one
    process bit for bit. (--init-barrier: see dist_worker.py for the race in MXNet's kvstore
    initialisation that it avoids.)"""
    workers = _run(tmp_path, "--kvstore", "dist_sync", "--steps", "3", "--momentum", "0.9",
                   "--update-on-kvstore", "false", "--init-barrier", servers=2)
    want = _reference(3, update_on_kvstore=False, momentum=0.9)
    for w in workers:
        for got, ref in zip(_arrays(w, 0, len(want)), want):
            np.testing.assert_array_equal(got, ref)


def test_dist_sync_device_two_workers_with_two_contexts_each(tmp_path):
    """dist_sync_device: each worker trains on two contexts (cpu(0), cpu(1) stand for its GPUs),
    sums their gradients itself ('device' reduction) and pushes the sum; the servers add the
    workers' sums and run the optimizer. Bit for bit the weights of the same job run eagerly;
    equal to eager training on four contexts in one process up to the order of the four-way
    sum ((a+b)+(c+d) here, one sum of four there)."""
    args = ["--kvstore", "dist_sync_device", "--contexts", "2", "--steps", "3", "--momentum", "0.9"]
    (tmp_path / "jit").mkdir()
    (tmp_path / "eager").mkdir()
    workers = _run(tmp_path / "jit", *args)
    eager = _run(tmp_path / "eager", *args, "--eager")
    want = _reference(3, update_on_kvstore=True, momentum=0.9, contexts=4)
    for w, e in zip(workers, eager):
        for got, same, ref in zip(_arrays(w, 0, len(want)), _arrays(e, 0, len(want)), want):
            np.testing.assert_array_equal(got, same)
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_dist_async_two_workers_two_servers_invariant(tmp_path):
    """dist_async (two servers, each running our C updater) applies each push when it arrives, so
    the result depends on timing. With plain SGD what must hold is: final weights = initial
    weights - lr * rescale * (sum of every gradient either worker pushed), and both workers read
    the same final weights."""
    steps = 4
    workers = _run(tmp_path, "--kvstore", "dist_async", "--steps", str(steps), "--init-barrier", servers=2,
                   c_updater=True)
    init = [p.data().asnumpy() for p in dist_worker.make_net(mx.cpu()).collect_params().values()]
    n = len(init)
    pushed = [a + b for a, b in zip(_arrays(workers[0], n, n), _arrays(workers[1], n, n))]
    lr, rescale = 0.1, 1.0 / dist_worker.BATCH
    for i, (w0, w1) in enumerate(zip(_arrays(workers[0], 0, n), _arrays(workers[1], 0, n))):
        np.testing.assert_array_equal(w0, w1)
        np.testing.assert_allclose(w0, init[i] - lr * rescale * pushed[i], rtol=1e-4, atol=1e-5)
        assert np.abs(pushed[i]).sum() > 0  # gradients really flowed


def _wait_for_line(job, name, text, deadline):
    proc = next(p for p in job.processes if p.name == name)
    while time.monotonic() < deadline:
        if any(text in line for line in proc.lines):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("victim", ["server 0", "worker 1", "scheduler"])
def test_a_process_killed_mid_training_stops_the_job(tmp_path, victim):
    """Once worker 0 is training (it prints 'ready' and goes on), kill the victim: the others
    would wait for it inside ps-lite forever; the launcher stops them and names the victim."""
    job = _job(tmp_path, "--kvstore", "dist_sync", "--hang-after", "2")
    start = time.monotonic()
    result = {}
    waiter = threading.Thread(target=lambda: result.update(r=job.wait(timeout=TIMEOUT)), daemon=True)
    waiter.start()
    ready = _wait_for_line(job, "worker 0", "ready", start + TIMEOUT)
    victim_proc = next(p for p in job.processes if p.name == victim)
    victim_proc.popen.kill()
    waiter.join(TIMEOUT + 30)
    assert ready, job.processes[-2].lines[-20:]
    assert not waiter.is_alive()
    r = result["r"]
    assert r.returncode == 1
    assert r.error.startswith("%s (pid %d) was killed by SIGKILL" % (victim, victim_proc.popen.pid)), r.error
    assert all(p.poll() is not None for p in job.processes)


def test_a_worker_that_fails_stops_the_job(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text("import os, sys, time\n"
                      "if os.environ['DMLC_ROLE'] == 'worker' and os.environ['DMLC_TASK_ID'] == '1':\n"
                      "    sys.exit('worker 1 gives up')\n"
                      "time.sleep(600)\n")
    job = _job(tmp_path, command=[sys.executable, str(script)])
    r = job.wait(timeout=60)
    assert r.returncode == 1
    assert r.error.startswith("worker 1 (pid %d) exited with status 1" % job.processes[-1].popen.pid), r.error
    assert r.lines("worker 1") == ["worker 1 gives up"]
    assert all(p.poll() is not None for p in job.processes)


def test_a_job_past_its_timeout_is_stopped(tmp_path):
    job = _job(tmp_path, command=[sys.executable, "-c", "import time; time.sleep(600)"])
    r = job.wait(timeout=1.0)
    assert r.returncode == 124
    assert r.error == "timed out after 1 s; still running: scheduler, server 0, worker 0, worker 1"
    assert all(p.poll() is not None for p in job.processes)
    with pytest.raises(launcher.JobFailed, match="timed out"):
        launcher.run([sys.executable, "-c", "import time; time.sleep(600)"], num_workers=1, timeout=0.5,
                     capture=True)


def test_launcher_sets_the_variables_ps_lite_reads(tmp_path):
    script = ("import os; print(' '.join('%s=%s' % (k, os.environ.get(k)) for k in "
              "['DMLC_ROLE', 'DMLC_TASK_ID', 'DMLC_PS_ROOT_URI', 'DMLC_INTERFACE', 'DMLC_NUM_WORKER', "
              "'DMLC_NUM_SERVER']))")
    r = launcher.run([sys.executable, "-c", script], num_workers=2, num_servers=2, timeout=60, capture=True,
                     scheduler_runs_command=True)
    assert r.error is None
    assert r.lines("server 1") == ["DMLC_ROLE=server DMLC_TASK_ID=1 DMLC_PS_ROOT_URI=127.0.0.1 DMLC_INTERFACE=lo "
                                   "DMLC_NUM_WORKER=2 DMLC_NUM_SERVER=2"]
    assert r.lines("worker 0")[0].startswith("DMLC_ROLE=worker DMLC_TASK_ID=0 ")
    assert r.lines("scheduler")[0].startswith("DMLC_ROLE=scheduler ")


def test_launcher_over_ssh_runs_the_command_on_the_hosts(tmp_path):
    """With a hosts file each server and worker is started through ssh with the job's variables
    exported; here 'ssh' is a stand-in that runs the remote command locally and records the host."""
    fake_ssh = tmp_path / "fake_ssh.sh"
    fake_ssh.write_text('#!/bin/sh\nhost="$1"; shift\nexec sh -c "echo on $host; $*"\n')
    fake_ssh.chmod(0o755)
    hosts = tmp_path / "hosts"
    hosts.write_text("# two machines\nnode-a\n\nnode-b  # the second\n")
    script = "import os; print(os.environ['DMLC_ROLE'], os.environ['DMLC_PS_ROOT_URI'])"
    r = launcher.run([sys.executable, "-c", script], num_workers=2, num_servers=1, timeout=60, capture=True,
                     hosts=launcher.read_hosts(str(hosts)), root_uri="10.0.0.1", ssh=[str(fake_ssh)],
                     scheduler_runs_command=True)
    assert r.error is None
    assert r.lines("scheduler") == ["scheduler 10.0.0.1"]  # the scheduler runs here
    assert r.lines("server 0") == ["on node-a", "server 10.0.0.1"]
    assert r.lines("worker 0") == ["on node-b", "worker 10.0.0.1"]
    assert r.lines("worker 1") == ["on node-a", "worker 10.0.0.1"]


def test_launcher_command_line(capsys):
    """`python -m minpy_jit.launcher -n 1 -s 1 [--env K=V] -- cmd`: exit status 0 when the workers
    succeed, 1 with the message on stderr when one fails."""
    ok = [sys.executable, "-c", "import os; print(os.environ['DMLC_ROLE'], os.environ['GREETING'])"]
    assert launcher.main(["-n", "1", "-s", "1", "--timeout", "60", "--env", "GREETING=hi",
                          "--scheduler-runs-command", "--"] + ok) == 0
    out = capsys.readouterr().out.splitlines()
    assert sorted(out) == ["[scheduler] scheduler hi", "[server 0] server hi", "[worker 0] worker hi"]
    fail = [sys.executable, "-c", "import os, sys; sys.exit(3 if os.environ['DMLC_ROLE'] == 'worker' else 0)"]
    assert launcher.main(["-n", "1", "-s", "1", "--timeout", "60"] + fail) == 1
    err = capsys.readouterr().err
    assert err.startswith("minpy_jit.launcher: worker 0 (pid ") and ") exited with status 3;" in err, err


def _alive(pid):
    """Whether pid is a live process (a zombie nobody reaped yet counts as gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc (Linux)")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_the_processes_stop_when_the_launcher_dies(tmp_path, sig):
    """The launcher stopped by SIGTERM stops its job; killed by SIGKILL it cleans up nothing
    itself, and each process it started gets SIGTERM from the kernel (PR_SET_PDEATHSIG) instead
    of waiting inside ps-lite forever. Every process writes its pid, then sleeps."""
    script = ("import os, sys, time\n"
              "name = os.path.join(sys.argv[1], os.environ['DMLC_ROLE'] + os.environ['DMLC_TASK_ID'])\n"
              "open(name + '.tmp', 'w').write(str(os.getpid())); os.rename(name + '.tmp', name)\n"
              "time.sleep(600)\n")
    env = dict(os.environ, **_env())
    cmd = [sys.executable, "-m", "minpy_jit.launcher", "-n", "2", "-s", "1", "--timeout", "300",
           "--scheduler-runs-command", "--", sys.executable, "-c", script, str(tmp_path)]
    log = open(tmp_path / "launcher.stderr", "w+")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    names = ["scheduler0", "server0", "worker0", "worker1"]
    pids = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all((tmp_path / n).exists() for n in names):
            assert proc.poll() is None, "the launcher exited early with status %s" % proc.returncode
            time.sleep(0.05)
        pids = [int((tmp_path / n).read_text()) for n in names if (tmp_path / n).exists()]
        assert len(pids) == 4, "only %d of the 4 processes started within 60 s" % len(pids)
        assert all(_alive(p) for p in pids)
        proc.send_signal(sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # where is it? (the launcher prints its threads on SIGUSR1)
            proc.send_signal(signal.SIGUSR1)
            time.sleep(2)
            log.seek(0)
            raise AssertionError("the launcher is alive 30 s after %s; its threads:\n%s" % (sig.name, log.read()))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.05)
        left = [n for n, p in zip(names, pids) if _alive(p)]
        assert not left, "still running 30 s after the launcher got %s: %s" % (sig.name, left)
        if sig == signal.SIGTERM:
            assert proc.returncode == 128 + sig
    finally:  # whatever failed above, nothing is left running
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        for p in pids:
            if _alive(p):
                os.killpg(p, signal.SIGKILL)
        log.close()


EXAMPLE = os.path.join(ROOT, "examples", "train_data_parallel.py")


@pytest.mark.parametrize("args", [[], ["--dist"]], ids=["two-contexts", "dist_sync"])
def test_the_example_trains_as_eager_does(args):
    """examples/train_data_parallel.py as the README runs it (one epoch): two contexts in one
    process, or (--dist) a job of 2 workers + 1 server started by the launcher, once eager and
    once under jit(); it exits with an error unless the weights are eager's bit for bit."""
    env = dict(os.environ, **_env())
    try:
        p = subprocess.run([sys.executable, EXAMPLE, "--epochs", "1", "--timeout", str(TIMEOUT)] + args, env=env,
                           capture_output=True, text=True, timeout=2 * TIMEOUT + 30)
    except OSError as e:  # pragma: no cover - a sandbox that forbids starting processes
        pytest.skip("cannot start the example: %s" % e)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    assert "max |weight difference| jit vs eager after training: 0\n" in out, out[-3000:]
    if args:
        assert "server runs the C updater for SGD" in out, out[-3000:]
