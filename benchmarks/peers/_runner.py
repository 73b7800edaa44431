"""What the peer runners share (stdlib only: each runs in its peer's own venv): their
command line and the line of JSON they report."""

import argparse
import json
import resource


def peak_rss_mib() -> float:
    """The peak resident memory of this process and its children, in MiB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024.0  # ru_maxrss is in KiB on Linux


def parser(description: str, mechanisms: tuple[str, ...]) -> argparse.ArgumentParser:
    """--data, --spec, --mechanism (one of the runner's ``mechanisms``), --epsilon, --delta,
    --seed and --out."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--data", required=True)
    ap.add_argument("--spec", required=True)
    ap.add_argument("--mechanism", required=True, choices=mechanisms)
    ap.add_argument("--epsilon", type=float, required=True)
    ap.add_argument("--delta", type=float, default=1e-9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    return ap


def report(t0: float, t1: float, t2: float, notes: str) -> None:
    """Print the runner's one line of JSON: fit, sample and total seconds (from the
    perf_counter readings before the fit, after it and after sampling), peak MiB, notes."""
    print(json.dumps({"fit_s": t1 - t0, "sample_s": t2 - t1, "total_s": t2 - t0,
                      "peak_rss_mib": peak_rss_mib(), "notes": notes}))
