#!/usr/bin/env python3
"""Fits the delay quantile table of the lab-5ghz network (specs/networks/lab-5ghz.json).

The source paper reports five statistics of the one-way latency it measured
on a lab 5 GHz network: mean 70.4 ms, sd 3.7 ms, p95 73.2 ms, min 52.2 ms and
max 82.2 ms. A normal distribution cannot match them (its p95 would be about
76.5 ms): p95 is only 0.76 sd above the mean while the minimum is 4.9 sd
below it, so the distribution is skewed to the left, with a narrow bulk and a
long lower tail. This script builds a smooth unimodal distribution that
matches all five exactly and writes it as the piecewise-linear quantile table
the `quantiles` delay distribution takes.

Model (continuous, used only to shape the table):

    core    N(mu, sigma)                       weight 1 - w_low - W_HIGH
    low     mu - Exp(mean L_MS) + N(0, sigma)   weight w_low   (earlier messages)
    high    mu + Exp(mean H_MS) + N(0, sigma)   weight W_HIGH  (later messages)

truncated to [52.2, 82.2]. The three components share their centre, so the
density is unimodal and smooth. L_MS, W_HIGH and H_MS are judgement
(assumptions, stated in specs/networks/README.md); mu, sigma and w_low are
solved for so that the *table* (not the continuous model) has exactly the
published mean, sd and p95. The table is then rounded to 0.01 ms (min, p95
and max stay exact) and interior points are moved by 0.01 ms where that keeps
the table's density unimodal and brings the mean and sd closer to 70.4 and 3.7.

The table's moments are exact: between neighbouring points (p_i, q_i) and
(p_i+1, q_i+1) the delay is uniform on [q_i, q_i+1], so

    E[X]   = sum dp (q_i + q_i+1) / 2
    E[X^2] = sum dp (q_i^2 + q_i q_i+1 + q_i+1^2) / 3

Usage:
    python3 specs/networks/fit-lab-5ghz.py           # fit, print, compare with lab-5ghz.json
    python3 specs/networks/fit-lab-5ghz.py --write   # also rewrite the table in lab-5ghz.json

Needs python3 and numpy only. Deterministic: the same numpy gives the same table.
Exit status: 0 when lab-5ghz.json holds exactly the fitted table, 1 otherwise.
"""

import json
import math
import os
import sys

import numpy as np

# The paper's figures (ms).
MEAN, SD, P95, MIN, MAX = 70.4, 3.7, 73.2, 52.2, 82.2

# Assumptions (judgement): the shape of the tails, which five statistics cannot pin down.
L_MS = 8.0     # mean extra earliness of the lower-tail component
W_HIGH = 0.05  # weight of the upper-tail component
H_MS = 2.0     # mean extra lateness of the upper-tail component

# Probabilities of the table: dense in the tails, where the shape changes fastest.
P = np.array([
    0, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1,
    0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75,
    0.8, 0.85, 0.9, 0.95, 0.975, 0.99, 0.995, 0.999, 1,
])
I50 = int(np.flatnonzero(P == 0.5)[0])
I95 = int(np.flatnonzero(P == 0.95)[0])

X = np.linspace(MIN, MAX, 60001)  # integration grid, 0.5 µs apart
_erfc = np.vectorize(math.erfc, otypes=[float])


def emg_pdf(x, mu, sigma, mean_extra):
    """Density of N(mu, sigma) + Exp(mean mean_extra)."""
    lam = 1.0 / mean_extra
    return (lam / 2) * np.exp(lam * (mu - x) + (lam * sigma) ** 2 / 2) * _erfc((mu + lam * sigma ** 2 - x) / (math.sqrt(2) * sigma))


def model_density(mu, sigma, w_low):
    core = np.exp(-((X - mu) / sigma) ** 2 / 2) / (sigma * math.sqrt(2 * math.pi))
    low = emg_pdf(2 * mu - X, mu, sigma, L_MS)  # mirrored: earlier than the core
    high = emg_pdf(X, mu, sigma, H_MS)
    return (1 - w_low - W_HIGH) * core + w_low * low + W_HIGH * high


def model_table(mu, sigma, w_low):
    """The model's quantiles at P (truncated to [MIN, MAX], so q(0) = MIN and q(1) = MAX)."""
    f = model_density(mu, sigma, w_low)
    cdf = np.concatenate([[0.0], np.cumsum((f[1:] + f[:-1]) / 2)])
    cdf /= cdf[-1]
    q = np.interp(P, cdf, X)
    q[0], q[-1] = MIN, MAX
    return q


def moments(q):
    """Exact mean and sd of the piecewise-linear inverse CDF through (P, q)."""
    dp, a, b = np.diff(P), q[:-1], q[1:]
    mean = float(np.sum(dp * (a + b) / 2))
    second = float(np.sum(dp * (a * a + a * b + b * b) / 3))
    return mean, math.sqrt(second - mean * mean)


def residuals(x):
    q = model_table(*x)
    mean, sd = moments(q)
    return np.array([mean - MEAN, sd - SD, q[I95] - P95])


def solve():
    x = np.array([71.8, 0.8, 0.25])  # mu, sigma, w_low
    for _ in range(50):
        r = residuals(x)
        if np.max(np.abs(r)) < 1e-10:
            break
        jac = np.empty((3, 3))
        for k in range(3):
            h = np.zeros(3)
            h[k] = 1e-6
            jac[:, k] = (residuals(x + h) - r) / 1e-6
        step = np.linalg.solve(jac, r)
        t = 1.0  # damped: halve until the residual falls
        while t > 1e-4 and np.max(np.abs(residuals(x - t * step))) >= np.max(np.abs(r)):
            t /= 2
        x = x - t * step
    return x


def rounded(q):
    """Rounds to 0.01 ms and keeps the anchors exact, then moves interior points
    by 0.01 ms, one or two neighbours at a time, while that makes the table's
    density unimodal (first) or brings (mean, sd) closer to the targets (second):
    rounding alone can put small wiggles into the density near the mode."""
    q = np.round(q, 2)
    q[0], q[I95], q[-1] = MIN, P95, MAX
    movable = [i for i in range(1, len(P) - 1) if i != I95]

    def score(t):
        m, s = moments(t)
        return (modality_excess(t), math.hypot(m - MEAN, s - SD))

    current = score(q)
    while True:
        best, best_score = None, current
        for i in movable:
            for group in ((i,), (i, i + 1)):
                if any(j not in movable for j in group):
                    continue
                for d in (-0.01, 0.01):
                    t = q.copy()
                    for j in group:
                        t[j] = round(t[j] + d, 2)
                    if np.any(np.diff(t) < 0):
                        continue
                    sc = score(t)
                    if sc[0] < best_score[0] or (sc[0] == best_score[0] and sc[1] < best_score[1] - 1e-12):
                        best, best_score = t, sc
        if best is None:
            return q
        q, current = best, best_score


def percentile(q, p):
    return float(np.interp(p, P, q))


def modality_excess(q):
    """How many times, beyond once, the table's density (dp/dq per segment)
    turns from rising to falling or back: 0 for a unimodal table."""
    dq = np.diff(q)
    if np.any(dq <= 0):
        return len(P)
    signs = np.sign(np.round(np.diff(np.diff(P) / dq), 12))
    signs = signs[signs != 0]
    return max(0, int(np.sum(signs[1:] != signs[:-1])) - 1)


def unimodal(q):
    return modality_excess(q) == 0


def fmt(p):
    """A probability as written in the table: 0, 0.0005, 0.25, 1."""
    return f"{p:.4f}".rstrip("0").rstrip(".")


def points_json(q):
    rows = [f"[{fmt(p)}, {q_i:.2f}]" for p, q_i in zip(P, q)]
    return "[\n" + ",\n".join("      " + r for r in rows) + "\n    ]"


def network_path():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "lab-5ghz.json")


def write_points(path, q):
    """Replaces the "points" array in the network file, leaving the rest of the file as it is."""
    text = open(path, encoding="utf-8").read()
    start = text.index('"points"')
    open_at = text.index("[", start)
    depth, end = 0, open_at
    for end in range(open_at, len(text)):
        depth += {"[": 1, "]": -1}.get(text[end], 0)
        if depth == 0:
            break
    text = text[:open_at] + points_json(q) + text[end + 1:]
    json.loads(text)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main(argv):
    mu, sigma, w_low = solve()
    continuous = model_table(mu, sigma, w_low)
    q = rounded(continuous)
    mean, sd = moments(q)
    print("lab-5ghz delay fit")
    print(f"  targets (paper): mean {MEAN} sd {SD} p95 {P95} min {MIN} max {MAX} ms")
    print(f"  assumptions: lower tail Exp mean {L_MS} ms; upper tail weight {W_HIGH}, Exp mean {H_MS} ms")
    print(f"  solved: mu {mu:.4f} ms, sigma {sigma:.4f} ms, lower-tail weight {w_low:.4f}")
    m0, s0 = moments(continuous)
    print(f"  unrounded table: mean {m0:.6f} sd {s0:.6f} p95 {continuous[I95]:.6f}")
    print(f"  table: {len(P)} points, rounded to 0.01 ms, unimodal: {'yes' if unimodal(q) else 'NO'}")
    print(f"  achieved: mean {mean:.4f} sd {sd:.4f} p50 {q[I50]:.2f} p95 {q[I95]:.2f} min {q[0]:.2f} max {q[-1]:.2f} ms")
    print(f"  errors:   mean {mean - MEAN:+.6f} sd {sd - SD:+.6f} ms")
    print("  other percentiles: " + ", ".join(
        f"p{100 * p:g} {percentile(q, p):.2f}" for p in (0.001, 0.01, 0.05, 0.1, 0.25, 0.75, 0.9, 0.99, 0.999)))
    print("  points: " + points_json(q).replace("[\n      ", "[").replace("\n      ", " ").replace("\n    ", ""))
    ok = abs(mean - MEAN) <= 0.01 and abs(sd - SD) <= 0.01 and unimodal(q)
    if not ok:
        print("fit FAILED the targets", file=sys.stderr)
        return 1

    path = network_path()
    if "--write" in argv:
        write_points(path, q)
        print(f"wrote the table to {path}")
    try:
        with open(path, encoding="utf-8") as f:
            stored = json.load(f)["delay"]["points"]
    except (OSError, KeyError, ValueError) as e:
        print(f"{path}: cannot read the stored table ({e})", file=sys.stderr)
        return 1
    expected = [[float(p), round(float(v), 2)] for p, v in zip(P, q)]
    if [[float(p), float(v)] for p, v in stored] == expected:
        print(f"{os.path.basename(path)} holds exactly this table")
        return 0
    print(f"{os.path.basename(path)} differs from this table (run with --write to update it)", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
