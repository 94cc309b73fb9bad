"""Turn a pytest-benchmark JSON file into a Markdown table of ratios to the numpy baseline.

    python benchmarks/ratio_table.py bench.json

One row per benchmark group, one column per implementation; each cell is that
implementation's median divided by the median of the group's baseline row (the raw numpy
reference), then the median itself. Lower is better. ``F`` marks an nnarray row whose warm
call fell back to another backend's kernels, ``T`` one that transferred data between devices.
A second table lists nnarray's first-call times (kernel compilation included).
"""

from __future__ import annotations

import json
import sys
from typing import Any


def fmt_time(s: float) -> str:
    """Seconds in the unit that suits them."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def _label(b: dict) -> str:
    return b["extra_info"].get("impl") or b["name"]


def tables(data: dict[str, Any]) -> str:
    """The Markdown text for one pytest-benchmark JSON document."""
    groups: dict[str, list[dict]] = {}
    for b in data["benchmarks"]:
        groups.setdefault(b["group"] or b["name"], []).append(b)
    labels: list[str] = []
    for rows in groups.values():
        for b in sorted(rows, key=lambda b: not b["extra_info"].get("baseline")):
            if _label(b) not in labels:
                labels.append(_label(b))
    labels.sort(key=lambda s: (not s.startswith("numpy"), not s.startswith("nnarray")))

    out = ["| workload | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
    for group, rows in groups.items():
        base = next((b["stats"]["median"] for b in rows if b["extra_info"].get("baseline")),
                    None)
        cells = dict.fromkeys(labels, "—")
        for b in rows:
            med, info = b["stats"]["median"], b["extra_info"]
            marks = ("F" if info.get("fallbacks") else "") + ("T" if info.get("transfers") else "")
            ratio = f"**{med / base:.2f}×**" if base else "n/a"
            cells[_label(b)] = f"{ratio} ({fmt_time(med)}){' ' + marks if marks else ''}"
        out.append(f"| {group} | " + " | ".join(cells[k] for k in labels) + " |")

    first = [(g, b) for g, rows in groups.items() for b in rows
             if "first_call_s" in b["extra_info"] and _label(b).startswith("nnarray")]
    if first:
        nl = sorted({_label(b) for _, b in first})
        out += ["", "First call (compilation included), then the warm median:", "",
                "| workload | " + " | ".join(nl) + " |", "|---" * (len(nl) + 1) + "|"]
        for g in groups:
            cells = dict.fromkeys(nl, "—")
            for gg, b in first:
                if gg == g:
                    cells[_label(b)] = (f"{fmt_time(b['extra_info']['first_call_s'])} / "
                                        f"{fmt_time(b['stats']['median'])}")
            out.append(f"| {g} | " + " | ".join(cells[k] for k in nl) + " |")
    return "\n".join(out)


def header(data: dict[str, Any]) -> str:
    """Date, CPU, Python and library versions of the run."""
    m = data.get("machine_info", {})
    v = m.get("versions", {})
    libs = ", ".join(f"{k} {val}" for k, val in v.items() if val and k != "opencl platforms")
    plat = "; ".join(v.get("opencl platforms", [])) or "none"
    env = ", ".join(f"{k}={val}" for k, val in m.get("env", {}).items() if val)
    return (f"{data.get('datetime', '?')[:19]} · {m.get('cpu', {}).get('brand_raw', '?')} "
            f"({m.get('cpu', {}).get('count', '?')} cores) · Python {m.get('python_version')}"
            f" · {libs} · OpenCL: {plat}{' · ' + env if env else ''}\n\nnnarray devices: "
            + "; ".join(d for v in m.get("nnarray_backends", {}).values()
                        if isinstance(v, list) for d in v))


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.exit("usage: python benchmarks/ratio_table.py bench.json")
    with open(args[0]) as f:
        data = json.load(f)
    print(header(data) + "\n\n" + tables(data))


if __name__ == "__main__":
    main()
