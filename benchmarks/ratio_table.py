"""Turn a pytest-benchmark JSON file into a Markdown table of ratios to the numpy baseline.

    python benchmarks/ratio_table.py bench.json [more.json ...]

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


def _row(b: dict) -> str:
    g, v = b["group"] or b["name"], b["extra_info"].get("variant")
    return f"{g} · {v}" if v else g


def _markdown(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|---" * len(head) + "|",
            *("| " + " | ".join(r) + " |" for r in rows)]


def tables(data: dict[str, Any]) -> str:
    """The Markdown text for one pytest-benchmark JSON document."""
    bench = data["benchmarks"]
    base = {b["group"]: b["stats"]["median"] for b in bench if b["extra_info"].get("baseline")}
    rows: dict[str, dict[str, dict]] = {}
    order = {g: i for i, g in enumerate(dict.fromkeys(b["group"] for b in bench))}
    for b in sorted(bench, key=lambda b: (order[b["group"]], _row(b) != b["group"])):
        rows.setdefault(_row(b), {})[_label(b)] = b
    labels = list(dict.fromkeys(_label(b) for b in sorted(
        bench, key=lambda b: not b["extra_info"].get("baseline"))))
    labels.sort(key=lambda s: (not s.startswith("numpy"), not s.startswith("nnarray")))

    def cell(b: dict | None) -> str:
        if b is None:
            return "—"
        med, info, ref = b["stats"]["median"], b["extra_info"], base.get(b["group"])
        marks = ("F" if info.get("fallbacks") else "") + ("T" if info.get("transfers") else "")
        ratio = f"**{med / ref:.2f}×**" if ref else "n/a"
        return f"{ratio} ({fmt_time(med)}){' ' + marks if marks else ''}"

    out = _markdown(["workload", *labels],
                    [[r, *(cell(cells.get(k)) for k in labels)] for r, cells in rows.items()])

    nl = [k for k in labels if any("first_call_s" in c.get(k, {}).get("extra_info", {})
                                   for c in rows.values())]
    if nl:
        def first(b: dict | None) -> str:
            if b is None or "first_call_s" not in b["extra_info"]:
                return "—"
            return f"{fmt_time(b['extra_info']['first_call_s'])} / {fmt_time(b['stats']['median'])}"

        out += ["", "First call (compilation included) / warm median:", "",
                *_markdown(["workload", *nl],
                           [[r, *(first(cells.get(k)) for k in nl)]
                            for r, cells in rows.items()])]
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


def load(paths: list[str]) -> dict[str, Any]:
    """One document from the JSON files of one or more runs on one machine: the first
    file's header with every file's benchmarks (``.ci/gpu`` runs the slow compiled rows
    apart, so a time limit on them cannot lose the others)."""
    docs = []
    for path in paths:
        with open(path) as f:
            docs.append(json.load(f))
    data = dict(docs[0])
    data["benchmarks"] = [b for d in docs for b in d["benchmarks"]]
    return data


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        sys.exit("usage: python benchmarks/ratio_table.py bench.json [more.json ...]")
    data = load(args)
    print(header(data) + "\n\n" + tables(data))


if __name__ == "__main__":
    main()
