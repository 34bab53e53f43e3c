#!/usr/bin/env python3
"""CPU time of every thread on the machine over a window, from /proc.

Usage: cpusample.py OUT.json [INTERVAL_S]
Polls /proc/*/task/*/{stat,schedstat} and /proc/stat every INTERVAL_S (default
0.2) until SIGTERM/SIGINT, then writes, per thread seen, its CPU time inside the
window: user and system seconds (stat, clock ticks) and, from schedstat, time on
CPU and time spent runnable but waiting for a CPU (ns). A thread's last sample
is the last poll that saw it, so up to INTERVAL_S of a thread that exits is
lost (the replayers' senders end with an idle settle period, so little is).
Threads born inside the window count from zero. Also writes /proc/stat's
per-CPU deltas (user, system, softirq, idle...) for the window. Stdlib only.
"""
import json
import os
import signal
import sys
import time

TCK = os.sysconf("SC_CLK_TCK")
out_path = sys.argv[1]
interval = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
stop = False


def on_signal(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def cpu_stat():
    rows = {}
    for line in (read("/proc/stat") or "").splitlines():
        if line.startswith("cpu"):
            w = line.split()
            rows[w[0]] = [int(x) for x in w[1:]]
    return rows


def snapshot():
    tasks = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            stat = read(f"/proc/{pid}/task/{tid}/stat")
            if not stat:
                continue
            r = stat.rfind(")")
            comm = stat[stat.find("(") + 1 : r]
            f = stat[r + 2 :].split()
            # fields after comm: state=0 ppid=1 ... utime=11 stime=12 ... starttime=19
            sched = (read(f"/proc/{pid}/task/{tid}/schedstat") or "0 0 0").split()
            tasks[(int(pid), int(tid), int(f[19]))] = {
                "comm": comm, "ppid": int(f[1]), "utime": int(f[11]), "stime": int(f[12]),
                "oncpu_ns": int(sched[0]), "wait_ns": int(sched[1]),
            }
    return tasks


first_t = time.time()
first_cpu = cpu_stat()
first = snapshot()
last = dict(first)
born = {}
while not stop:
    time.sleep(interval)
    snap = snapshot()
    for k, v in snap.items():
        if k not in first and k not in born:
            born[k] = True
        last[k] = v
last_cpu = cpu_stat()
last_t = time.time()

names = {}
for (pid, tid, start), v in last.items():
    if tid == pid:
        names[pid] = v["comm"]
threads = []
for k, v in last.items():
    pid, tid, start = k
    base = first.get(k) or {"utime": 0, "stime": 0, "oncpu_ns": 0, "wait_ns": 0}
    d = {
        "pid": pid, "tid": tid, "comm": v["comm"], "process": names.get(pid, v["comm"]),
        "ppid": v["ppid"], "born_in_window": k in born,
        "user_s": (v["utime"] - base["utime"]) / TCK, "sys_s": (v["stime"] - base["stime"]) / TCK,
        "oncpu_s": (v["oncpu_ns"] - base["oncpu_ns"]) / 1e9, "runq_wait_s": (v["wait_ns"] - base["wait_ns"]) / 1e9,
    }
    if d["oncpu_s"] > 0 or d["user_s"] + d["sys_s"] > 0 or d["runq_wait_s"] > 0:
        threads.append(d)
threads.sort(key=lambda d: -d["oncpu_s"])
cols = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]
cpus = {}
for name, vals in last_cpu.items():
    base = first_cpu.get(name, [0] * len(vals))
    cpus[name] = {c: (vals[i] - base[i]) / TCK for i, c in enumerate(cols) if i < len(vals)}
with open(out_path, "w", encoding="utf-8") as f:
    json.dump({"window_s": last_t - first_t, "interval_s": interval, "self_pid": os.getpid(),
               "cpus": cpus, "threads": threads}, f, indent=1)
