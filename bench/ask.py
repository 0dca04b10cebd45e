"""How fast `ask` answers: answers per second in-process over a varied corpus, and the wall
time of one `torchbot ask` process beside a bare `python -c pass` of the same interpreter,
interleaved in the same run so both see the same machine load. Goals: >= 2,000 answers/s;
one process <= 150 ms, <= 250 ms answering from both real repositories; and its CPU time (user +
sys, median of 7) at most 4 times that of the bare `python -c pass` answering from the embedded
catalog, at most 6 times answering from both real repositories (the ratio moves far less with
the machine's load than the wall time does). Each process figure is taken twice: with no
`TORCHBOT_` setting, and with the full set a team exports for `serve` (Slack and GitHub tokens,
repository, state DB, Flox org, log level, admins; TEAM below), which `ask` must not pay for.

It also reports the share of a fresh batch of generated questions answered right
(tests/support/ask_messages.py: a GPU, a CPU and a Python version dressed with filler, greetings,
word order, case, units, count prefixes and a settled earlier machine in front; right = the same
build as the plain message). `--seed N` draws another batch.

With repositories (`bench/ask.py GITDIR_PYTORCH GITDIR_TORCHVISION`, e.g. the git dirs of the
real build-pytorch and build-torchvision) it also measures the rate answering from them, with
torchvision questions in the corpus: the model is cached by commit, so the rate must stay >= 2,000/s.

Processes are timed after one warm-up run, as a user's second `ask` is: the compiled catalog
cache (config/catalog_cache.py) and Python's bytecode are written by then. The first process
with an empty cache is reported too. On a shared machine the figures move with the load: run it
a few times and quote the range, with the bare-python baseline of the same run."""

from __future__ import annotations

import itertools
import os
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._home import isolate  # noqa: E402

isolate()  # torchbot's own files go to a temporary home, never the real one

from bot.frontends.commands import ask  # noqa: E402
from config.catalog_data import load_catalog  # noqa: E402
from config.settings import Settings  # noqa: E402
from release.context import Context  # noqa: E402


def corpus() -> list[str]:
    cat = load_catalog()
    gpus = list(cat.gpu_models)
    cpus = ["Graviton3", "Graviton4", "i9-12900K", "EPYC 9654", "Xeon Platinum 8480+", "EPYC 7R13", "Grace",
            "Ryzen 9 5950X", "i7-2600K", "Xeon Gold 6248", "", "Neoverse N1"]
    extras = ["", "python 3.12", "bf16 training", "int8 inference", "vllm 0.14", "driver 535", "python 3.11"]
    instances = ["p5.48xlarge", "p4d.24xlarge", "g5.xlarge", "g6e.12xlarge", "a3-highgpu-8g", "g2-standard-8",
                 "Standard_ND96isr_H100_v5", "p3.2xlarge", "g5g.xlarge", "DGX Spark", "m7g.4xlarge", "c4a-standard-8",
                 "Standard_D8ps_v6", "r7iz.large"]
    qs = [f"{g} with {c} {e}".strip() for g, c, e in itertools.product(gpus, cpus, extras)]
    qs = qs[:: max(1, len(qs) // 470)][:470]
    qs += [f"which variant for a {i}?" for i in instances]
    qs += ["no GPU, " + c for c in cpus if c] + [
        "MacBook Pro M3",
        "Tesla K80",
        "hello",
        "sm_86",
        "compute capability 9.0",
    ]
    qs += [
        "Flags: fpu avx avx2 fma f16c avx512f avx512dq avx512vl avx512bw avx512_vnni\n| 0 NVIDIA A100-SXM4-80GB |"
    ] * 20
    # The real-phrasing corpus: plurals, typos, model numbers, cloud families, unknown names, WSL.
    qs += [c["q"] for c in tomllib.loads((ROOT / "tests" / "engine" / "ask_corpus.toml").read_text())["case"]]
    return qs


def rate(ctx: Context, qs: list[str]) -> float:
    for q in qs[:50]:  # warm caches (catalog, compiled matchers)
        ask(ctx, q)
    rounds = []
    for _ in range(5):
        t = time.perf_counter()
        for q in qs:
            ask(ctx, q)
        rounds.append(len(qs) / (time.perf_counter() - t))
    return statistics.median(rounds)


TEAM = {  # what a team that runs `torchbot serve` exports (fake values of the right shapes)
    "TORCHBOT_SLACK_BOT_TOKEN": "xoxb-1111-2222-abcdefabcdef", "TORCHBOT_SLACK_APP_TOKEN": "xapp-1-A111-222-abcdef",
    "TORCHBOT_SLACK_SIGNING_SECRET": "0123456789abcdef0123456789abcdef", "TORCHBOT_GITHUB_TOKEN": "ghp_" + "a" * 36,
    "TORCHBOT_STATE_DB": "postgresql://torchbot:pw@db.internal:5432/torchbot", "TORCHBOT_FLOX_ORG": "ml-infra",
    "TORCHBOT_LOG_LEVEL": "INFO", "TORCHBOT_ADMINS": "U0123ABCD", "TORCHBOT_ANNOUNCE_CHANNEL": "C0123ABCD",
}


def generated(seed: int, size: int = 400) -> str:
    from bot.engine.hardware import parse
    from bot.engine.select import recommend
    from tests.support.ask_messages import share

    cat = load_catalog()
    right, missed = share(lambda t: recommend(cat, parse(cat, t)), seed, size)
    shown = "".join(f"\n  missed: {c.text!r} (as {c.canonical!r})" for c in missed[:5])
    return f"generated questions (seed {seed}, {size}): {right:.1%} answered right{shown}"


def main() -> None:
    seed = 37
    if "--seed" in sys.argv:
        at = sys.argv.index("--seed")
        seed = int(sys.argv[at + 1])
        del sys.argv[at : at + 2]
    ctx = Context(Settings(repo_path=None))
    qs = corpus()
    print(generated(seed))
    print(f"corpus: {len(qs)} varied questions")
    print(f"in-process: {rate(ctx, qs):,.0f} answers/s (median of 5 rounds; goal >= 2,000)")
    if len(sys.argv) > 1:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            paths = [clone(src, Path(tmp) / f"repo{i}") for i, src in enumerate(sys.argv[1:])]
            rctx = Context(Settings(repo_path=paths[0], repo_paths=paths))
            t = time.perf_counter()
            cat = rctx.catalog
            first = time.perf_counter() - t
            mixed = qs + [f"which torchvision for {q}" for q in qs[::5]] + [f"torchaudio for {q}" for q in qs[::25]]
            variants = sum(len(b.variants) for b in [*cat.branches.values(), *cat.vision.values()])
            print(
                f"from {len(paths)} repositories "
                f"({variants} "
                f"variants; first read {first:.2f} s): {rate(rctx, mixed):,.0f} answers/s over {len(mixed)} questions "
                "incl. torchvision/torchaudio (goal >= 2,000)"
            )

            for team in (False, True):
                what = "one `torchbot ask` process answering from them" + (", a team's settings" if team else "")
                print(processes(what, 250, 6.0, ",".join(map(str, paths)), team))
    for team in (False, True):
        print(processes("one `torchbot ask` process" + (", a team's settings" if team else ", no settings"),
                        150, 4.0, None, team))


RUNS = 15
CPU_RUNS = 7  # of the RUNS, the first 7 pairs give the CPU-time medians
QUESTION = "which variant for an H100 with Graviton3"


def processes(what: str, goal_ms: int, goal_ratio: float, repo_path: str | None = None, team: bool = False) -> str:
    """The wall and CPU time of `torchbot ask` processes and of bare `python -c pass` processes,
    RUNS of each interleaved, after a warm-up; and the first process with an empty cache."""
    import tempfile

    # a user's shell writes bytecode; torchbot's files go to the bench's temporary home
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith("TORCHBOT_") and k != "PYTHONDONTWRITEBYTECODE"}
    if team:
        env.update(TEAM)
    if repo_path:
        env["TORCHBOT_REPO_PATH"] = repo_path
    exe = ROOT / ".venv" / "bin" / "torchbot"
    cmd = [*([str(exe)] if exe.exists() else [sys.executable, "-m", "bot"]), "ask", QUESTION]
    bare = [sys.executable, "-c", "pass"]

    def run(argv: list[str], extra: dict[str, str] | None = None) -> tuple[float, float]:
        """(wall ms, CPU ms: user + sys of the process, from wait4)."""
        t = time.perf_counter()
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={**env, **(extra or {})}, cwd=ROOT)
        _, status, usage = os.wait4(p.pid, 0)
        wall = (time.perf_counter() - t) * 1000
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode:
            raise SystemExit(f"{' '.join(argv)} failed with exit code {p.returncode}")
        return wall, (usage.ru_utime + usage.ru_stime) * 1000

    with tempfile.TemporaryDirectory() as empty:
        cold = run(cmd, {"TORCHBOT_CACHE_DIR": empty})[0]
    run(cmd)  # warm-up: the compiled caches and the bytecode written
    asks, bares = [], []
    for _ in range(RUNS):
        bares.append(run(bare))
        asks.append(run(cmd))
    wall_ask, wall_bare = [w for w, _ in asks], [w for w, _ in bares]
    cpu_ask = statistics.median(c for _, c in asks[:CPU_RUNS])
    cpu_bare = statistics.median(c for _, c in bares[:CPU_RUNS])
    ratio = cpu_ask / cpu_bare
    verdict = "under" if statistics.median(wall_ask) <= goal_ms else "OVER"
    within = "within" if ratio <= goal_ratio else "OVER"
    return (f"{what}: {_spread(wall_ask)} beside a bare `python -c pass`: {_spread(wall_bare)} "
            f"({RUNS} interleaved runs; {verdict} the goal of {goal_ms} ms; first process with an empty cache "
            f"{cold:.0f} ms)\n  CPU time (user + sys, median of {CPU_RUNS}): {cpu_ask:.0f} ms against "
            f"{cpu_bare:.0f} ms for the bare python: {ratio:.2f}x ({within} the goal of {goal_ratio:g}x)")


def _spread(ms: list[float]) -> str:
    return f"median {statistics.median(ms):.0f} ms (min {min(ms):.0f}, max {max(ms):.0f})"


def clone(src: str, dst: Path) -> Path:
    """A clone with a local branch for every branch of ``src`` (as a team's checkout has)."""
    subprocess.run(["git", "clone", "-q", src, str(dst)], check=True)
    out = subprocess.run(["git", "-C", str(dst), "for-each-ref", "--format=%(refname:lstrip=3)", "refs/remotes/origin"],
                         capture_output=True, text=True, check=True).stdout.split()
    for b in out:
        if b != "HEAD":
            subprocess.run(["git", "-C", str(dst), "branch", "-q", b, f"origin/{b}"], check=False, capture_output=True)
    return dst


if __name__ == "__main__":
    main()
