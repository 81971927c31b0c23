"""``ackreplay flows`` and ``ackreplay acks``: what ingest found in captures."""

from __future__ import annotations

import functools
import json
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ackreplay.cli.errors import EXIT_BAD_INPUT, EXIT_NOT_FOUND, EXIT_USAGE, fail, guarded, ingest_errors, warn
from ackreplay.cli.inputs import DEFAULT_MEMORY_BUDGET_MB, FilterOption, MemoryBudget, label, regular_file
from ackreplay.cli.kernel_choice import choose_kernels
from ackreplay.cli.render import column_table, num, terminal_width
from ackreplay.cli.warmup import announce_cold

if TYPE_CHECKING:
    from ackreplay.ingest import CaptureIngest, FlowSummaries, FlowSummary


FLOW_JSON_FIELDS = (
    "flow_id", "sender", "receiver", "packets", "acks", "dupacks", "retransmissions", "loss_events",
    "goodput_bps", "rttmin_s", "mss", "vantage",
)


@functools.cache
def flow_json_keys() -> tuple[str, ...]:
    """The keys of a flow object of ``flows --json``: its file, the documented keys, then every other summary
    field."""
    from ackreplay.ingest.model import FLOW_FIELDS

    return "file", *FLOW_JSON_FIELDS, *(k for k in FLOW_FIELDS if k not in FLOW_JSON_FIELDS)


#: Flows encoded at a time by :func:`flows_json`.
JSON_BLOCK = 4096
_BOOL_JSON = {True: "true", False: "false"}


def _float_json(v: float) -> str:
    if v != v:
        return "NaN"
    return "Infinity" if v == math.inf else "-Infinity" if v == -math.inf else float.__repr__(v)


#: How ``json.dumps`` writes a value of each exact scalar type (others: :func:`_nested_json`).
_SCALAR_JSON: dict[type, Callable[[Any], str]] = {
    str: encode_basestring_ascii, int: int.__repr__, float: _float_json, bool: _BOOL_JSON.__getitem__,
    type(None): lambda _: "null",
}


def _nested_json(v: Any) -> str:
    """``v`` as ``json.dumps(..., indent=2)`` writes it two levels deep (a flow object's value)."""
    return json.dumps(v, indent=2).replace("\n", "\n    ")


def _json_values(values: list[Any]) -> list[str]:
    """A column of flow values as ``json.dumps(..., indent=2)`` writes them: a column of one scalar type at
    once, else value by value."""
    types = set(map(type, values))
    if types == {float} and all(map(math.isfinite, values)):
        return list(map(float.__repr__, values))
    if len(types) == 1 and (encode := _SCALAR_JSON.get(types.pop())) is not None:
        return list(map(encode, values))
    return [_SCALAR_JSON[type(v)](v) if type(v) in _SCALAR_JSON else _nested_json(v) for v in values]


def _value_columns(flows: Sequence[FlowSummary]) -> Callable[[str], list[Any]]:
    """A field's values of every flow of ``flows``: read from its column for ingest's ``FlowSummaries``, else
    from each summary."""
    from ackreplay.ingest import FlowSummaries

    if isinstance(flows, FlowSummaries):
        return lambda name: flows.column(name).to_list()
    return lambda name: [getattr(s, name) for s in flows]


def flows_json(files: Iterable[tuple[str, Sequence[FlowSummary]]]) -> Iterator[str]:
    """The text of ``json.dumps([{"file": name, **flow}, …], indent=2)`` for the flows of each file, the flow's
    keys in :func:`flow_json_keys` order, in pieces of ``JSON_BLOCK`` flows: each encoded a column at a time and
    joined once with the keys and punctuation."""
    # a flow's pieces: each value after its key (the file's after the flows' separator and the opening brace),
    # then the closing brace
    keys = flow_json_keys()
    columns = [(',\n    "' + k + '": ', k) for k in keys[1:]]
    width = 2 * len(keys) + 1
    items = 0
    yield "["
    for name, flows in files:
        file_json = encode_basestring_ascii(name)
        for lo in range(0, len(flows), JSON_BLOCK):
            block = _value_columns(flows[lo: lo + JSON_BLOCK])
            n = min(JSON_BLOCK, len(flows) - lo)
            pieces: list[str] = [""] * (width * n)
            pieces[0::width] = [",\n  {\n    \"file\": "] * n
            if not items:
                pieces[0] = "\n  {\n    \"file\": "
            pieces[1::width] = [file_json] * n
            for j, (key, field) in enumerate(columns, 1):
                pieces[2 * j::width] = [key] * n
                pieces[2 * j + 1::width] = _json_values(block(field))
            pieces[width - 1::width] = ["\n  }"] * n
            yield "".join(pieces)
            items += n
    yield "\n]" if items else "]"


def load(path: Path, memory_budget_mb: int = DEFAULT_MEMORY_BUDGET_MB) -> CaptureIngest:
    """Ingest one capture argument (a file, ``-`` for standard input, or a pipe); bad input exits 3."""
    from ackreplay.ingest import ingest_capture

    announce_cold()
    with ingest_errors(label(path)):
        try:
            with regular_file(path) as readable:
                cap = ingest_capture(readable, memory_budget=memory_budget_mb << 20)
        except OSError as exc:
            fail(EXIT_BAD_INPUT, "unreadable_input", f"{label(path)}: {exc.strerror or exc}")
    for w in cap.stats.warnings:
        warn(f"{label(path)}: {w}")
    return cap


def flows_table(shown: FlowSummaries) -> str:
    """The table ``ackreplay flows`` prints of these flows."""

    def col(name: str) -> list[Any]:
        return shown.column(name).to_list()

    columns = [
        list(map(str, col("flow_id"))), col("sender"), col("receiver"), list(map(str, col("packets"))),
        list(map(str, col("bytes"))), [num(x, 1e-6, 3) for x in col("goodput_bps")],
        [num(x, 1e3, 2) for x in col("rttmin_s")], list(map(str, col("mss"))),
        list(map("{}/{}/{}".format, col("retransmissions"), col("spurious_retransmissions"),
                 col("reordered_segments"))),
        list(map("{}/{}".format, col("fast_retransmit_events"), col("timeout_events"))),
        [v + (" (rebuilt)" if rec and sound else "")
         for v, rec, sound in zip(col("vantage"), col("reconstruction"), col("reconstruction_sound"), strict=True)],
    ]
    # what each column counts under its name: packets are the connection's both ways (data and ACKs), bytes the
    # data the receiver acknowledged, retransmissions data segments sent again (of them spurious: a D-SACK reported
    # the original received) and reordered originals the path delivered late (seen away from the sender)
    headers = ["flow", "sender", "receiver", "packets\nboth ways", "bytes\nacked", "goodput\nMbit/s",
               "rttmin\nms", "mss\nbytes", "retx/spur/\nreordered", "fr/rto\nepisodes", "vantage"]
    return column_table(headers, columns, "rllrrrrrrrl", width=terminal_width())


def flows(
    files: Annotated[list[Path], typer.Argument(metavar="CAPTURE...",
                                                help="Capture files (pcap, pcapng, optionally gzipped); - reads "
                                                      "standard input.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list of flow objects.")] = False,
    memory_budget: MemoryBudget = DEFAULT_MEMORY_BUDGET_MB,
    filter_expr: FilterOption = None,
) -> None:
    """List the TCP flows (directions of connections that carried data) in captures."""
    choose_kernels(files)
    keep: Callable[[Any], bool] | None = None
    if filter_expr is not None:
        from ackreplay.ingest.flowfilter import FilterError, compile_filter

        try:
            keep = compile_filter(filter_expr)
        except FilterError as exc:
            fail(EXIT_USAGE, exc.code, exc.message)
    listed: list[tuple[str, FlowSummaries]] = []
    for path in files:
        cap = load(path, memory_budget)
        shown = cap.flows if keep is None else cap.flows.select(keep)
        if as_json:  # printed once every capture is read (a bad one fails with nothing printed)
            listed.append((label(path), shown))
            continue
        st = cap.stats
        skipped = ", ".join(f"{k} {v}" for k, v in st.skipped.items()) or "none"
        grouped = f"; analysed in {st.connection_groups} connection groups (memory budget)" if st.spilled else ""
        print(f"{label(path)}: {st.format}{' (gzip)' if st.gzipped else ''}, {st.records} packets, "
              f"{st.tcp_packets} TCP, {st.connections} connections, {st.flows} flows; skipped: {skipped}{grouped}")
        if keep is not None:
            print(f"{len(shown)} of {len(cap.flows)} flows match the filter")
        print(flows_table(shown) if len(shown) else "(no TCP flow carried data)" if not cap.flows
              else "(no flow matches the filter)")
        print()
    if as_json:
        for text in flows_json(listed):
            sys.stdout.write(text)
        sys.stdout.write("\n")


def acks(
    file: Annotated[Path, typer.Argument(metavar="CAPTURE", help="Capture file.")],
    flow: Annotated[int, typer.Option("--flow", help="Flow id, as listed by `ackreplay flows`.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Output file: .parquet or .csv.")],
    memory_budget: MemoryBudget = DEFAULT_MEMORY_BUDGET_MB,
) -> None:
    """Export one flow's ACK stream (docs/estimators.md §1.1 columns) as Parquet or CSV, each ACK with its frame number
    (column frame: the packet's number in the capture file, as Wireshark numbers it)."""
    suffix = output.suffix.lower()
    if suffix not in (".parquet", ".csv"):
        fail(EXIT_USAGE, "bad_output_format", f"{output}: the output must end in .parquet or .csv")
    choose_kernels([file])
    cap = load(file, memory_budget)
    try:
        data = cap.flow(flow)
    except KeyError:
        ids = ", ".join(str(s.flow_id) for s in cap.flows) or "none"
        fail(EXIT_NOT_FOUND, "unknown_flow", f"{file} has no flow {flow} (flows: {ids})")
    frame = data.acks.drop("flow_id")

    def write() -> None:
        if suffix == ".parquet":
            frame.write_parquet(output)
        else:
            frame.write_csv(output)

    guarded(write)
    print(f"wrote {len(frame)} ACK rows of flow {flow} ({data.summary.sender} -> {data.summary.receiver}) "
          f"to {output}")
