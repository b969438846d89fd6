"""The per-run projection cache: what the run, round and agent grains read of each run, kept.

A query at those grains needs of each run only its folder's small files and its log's head
and tail (the export's :class:`~glossogen.export.RunRecord`), turned into rows by the export's
own builders (``run_row``, ``round_rows``, ``agent_rows``). Reading every log again is what
made a warm query over 10,000 runs take 15 s; this cache keeps each run's rows and its
selection facts in one file for the whole runs directory,
``<runs_dir>/.glossogen/analysis_projection.zip`` (one Parquet table per grain; a dot folder:
never listed as a scenario), and a query reads a run's log again only when its files changed.

**Key.** Each run's entry carries a stamp: its log's inode, size, mtime and ctime, and the
SHA-256 of the content of its ``config.json``, ``labels.json``, ``lineage.json`` and both
report files (ours and a GlossoGen 0.5 one), a missing file stamped as missing (:func:`stamp`
says why the log is not hashed). A query stamps every listed run first; an entry whose stamp
differs is dropped and the run read again (a changed log or report, a config or labels
rewritten, even at the same size with its modification time put back), a run whose folder
or log is gone is not listed, so it is not selected, and its entry is dropped at the next
write. A stamp is taken before the files are
read, so a file changed while it was read leaves an entry that the next query finds stale.

**What is kept.** Only ended runs (a status other than ``running``, ``stopped`` or ``queued``,
all three of which depend on a live process): a live run is read afresh each time and never
written. Per cell, the text a String column would hold (the export's ``_as_text``, made
spreadsheet-safe as ``safe_text`` makes it) and the kind of the Python value it came from
(absent, blank, bool, int, float, text, other). A grain's frame is typed from the kinds of the
selected rows alone, by :func:`~glossogen.export._cells.typed_series`'s rule (all bools:
Boolean; ints: Int64; ints and floats: Float64; else String), its columns those the selected
rows hold, ordered as the export orders them, so a query answered from the cache equals the
same query answered from the logs (tested, on a cohort whose knob is an int in some runs and a
float in others). Local runs directories only; an object store is read as before.

**Concurrency.** The file is written whole to a temporary name in the same folder and moved
over the old one (``os.replace``): a reader sees the old file or the new one, never half of
one. Two writers at once each write a complete file and the last move wins; whatever an entry
is, its stamp decides whether it is used. An unreadable cache file is ignored (and rewritten).

**Not cached:** the message, call and observation grains (the first two read the whole log
anyway; observations are per metric), which select and read runs as before.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import polars as pl

from glossogen.export import RunRecord
from glossogen.export._cells import _as_text
from glossogen.export._frames import (
    AGENT_OWN,
    LABEL_FLAG,
    METRIC_PREFIXES,
    ROUND_KEYS,
    RUN_META,
    agent_rows,
    context_columns,
    ordered_columns,
    round_rows,
    run_row,
    with_context,
)
from glossogen.export._runlog import RUNNING, STOPPED, AgentFacts, LogFacts
from glossogen.storage import resolved
from glossogen.storage._fs import _umask

CACHE_FOLDER = ".glossogen"
"""The folder under the runs directory that holds the cache (a dot name: never a scenario)."""

CACHE_FILE = "analysis_projection.zip"
"""The cache file's name in :data:`CACHE_FOLDER`: a zip of one Parquet file per table
(``run.parquet``, ``round.parquet``, ``agent.parquet``), stored uncompressed (Parquet's own
zstd compresses)."""

CACHED_GRAINS = ("run", "round", "agent")
"""The grains answered from the cache."""

_RUN, _STAMP, _RECORD = "__run", "__stamp", "__record"
_META = ("", _RUN, _STAMP, _RECORD)
_TABLES = ("run", "round", "agent")
_KIND = "__kind:"
_HEADS = {"run": RUN_META, "round": ROUND_KEYS, "agent": AGENT_OWN}

# Kind bits of one cell: the key is present, then the type of its value (none: blank).
_PRESENT, _BOOL, _INT, _FLOAT, _STR, _OTHER = 1, 2, 4, 8, 16, 32
_UNCACHED_STATUSES = (RUNNING, STOPPED, "queued")
_DAMAGE_FACTS = '"raw_text":true'
"""In an entry's facts JSON since text is kept as recorded (earlier entries held it made
spreadsheet-safe, and before that no damaged lines): an entry without it is read again."""
_FLAG_FACTS = f'"label_flag":"{LABEL_FLAG}"'
_LABEL_FACTS = '"not_labels":'
"""In an entry's facts JSON since a number in ``labels.json`` is a label and a list, object
or null is named in a note (earlier entries dropped them): an entry without it is read again."""
"""In an entry's facts JSON: the text its bare tags' ``label_flag.`` cells hold (earlier
entries held ``true``): an entry without it is read again."""


def cache_path(runs_dir: str) -> str:
    """Where the cache of ``runs_dir`` lives."""
    return os.path.join(runs_dir, CACHE_FOLDER, CACHE_FILE)


def stamp(run_dir: str, scenario: str) -> str:
    """What each file a run's projection is read from holds; ``-`` when absent.

    The small files (``config.json``, ``labels.json``, ``lineage.json``, both reports) by the
    SHA-256 of their content: an edit that keeps a file's size and puts its mtime back
    (``touch -r``) is found, which no check on size and mtime can do. The log, which can be
    large (10,000 logs of 1.47 MB are 14.7 GB: hashing them all took a warm query from 2.1 to
    16.5 CPU-s and from 4.5 to 80.6 s wall, ``bench/analysis_speed.py``), by its inode, size,
    mtime and *ctime* (ns): the system sets ctime on every write, rename or ``utime`` call and
    no call sets it back, so a log edited in place, even at its size with its mtime put back,
    or replaced by another file, has another stamp without being read.

    The folder is listed once and only the files it holds are opened (a warm query stamps
    every run: three of the five small files are absent from most runs).
    """
    try:
        held = set(os.listdir(run_dir))
    except (FileNotFoundError, NotADirectoryError):
        held = set()
    log = f"{scenario}.jsonl"
    parts = [_log_stamp(f"{run_dir}/{log}") if log in held else "-"]
    for name in ("config.json", "labels.json", "lineage.json",
                 f"{scenario}_report.json", f"{scenario}_report.glossogen-0.5.json"):  # fmt: skip
        parts.append(_digest(f"{run_dir}/{name}") if name in held else "-")
    return ";".join(parts)


def _log_stamp(path: str) -> str:
    """A log's inode, size, mtime and ctime (ns); ``-`` when it is gone (a dangling link)."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "-"
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _digest(path: str) -> str:
    """A small file's SHA-256; ``-`` when it is gone or a folder."""
    try:
        with open(path, "rb") as file:
            return hashlib.sha256(file.read()).hexdigest()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return "-"


def _kind(value: Any) -> int:
    if value is None:
        return _PRESENT
    kind = type(value)
    if kind is bool:
        return _PRESENT | _BOOL
    if kind is int:
        return _PRESENT | _INT
    if kind is float:
        return _PRESENT | _FLOAT
    if kind is str:
        return _PRESENT | _STR
    return _PRESENT | _OTHER


def _text(value: Any, kind: int) -> str | None:
    if value is None:
        return None
    return _as_text(value)


def _record_facts(record: RunRecord) -> str:
    """The facts selection and comparison read of a run, as JSON (see :class:`_Light`).

    With the log's damaged lines, so an answer from the cache names them as a fresh read does.
    """
    import orjson

    return orjson.dumps(
        {
            "run_url": record.run_url,
            "log_url": record.log_url,
            "config": record.config,
            "labels": record.labels,
            "not_labels": record.not_labels,
            "lineage": record.lineage,
            "status": record.facts.status,
            "status_detail": record.facts.status_detail,
            "agents": list(record.facts.agents),
            "bad_line_numbers": record.facts.bad_line_numbers,
            "torn_line": record.facts.torn_line,
            "raw_text": True,
            "label_flag": LABEL_FLAG,
        },
        default=str,
        option=orjson.OPT_NON_STR_KEYS,
    ).decode()


class _Light(RunRecord):
    """A record of what selection and comparison read of a run, decoded on first use.

    Knobs, labels, lineage, status, the roster's ids and the log's damaged lines (``facts``
    holds only those); its rows come from the cache, never from it (it has no report). A query
    that filters on none
    of them decodes none: ``config``, ``labels``, ``lineage`` and ``facts`` are read from the
    cached JSON when first asked for.
    """

    def __init__(self, run_id: str, facts_json: str, place: str) -> None:  # noqa: D107
        self.run_id, self.report = run_id, None
        self.scenario = run_id.partition("/")[0]
        self._json = facts_json
        self._place = place

    def place(self) -> str:
        """The folder's one spelling, found when the run was stamped (no JSON decoded)."""
        return self._place

    def __getattr__(self, name: str) -> Any:
        if name not in ("run_url", "log_url", "config", "labels", "not_labels", "lineage",
                        "facts"):  # fmt: skip
            raise AttributeError(name)
        facts = json.loads(self.__dict__["_json"])
        self.run_url, self.log_url = facts["run_url"], facts["log_url"]
        self.config, self.labels, self.lineage = facts["config"], facts["labels"], facts["lineage"]
        self.not_labels = facts["not_labels"]
        self.facts = LogFacts(
            status=facts["status"],
            status_detail=facts["status_detail"],
            agents={a: AgentFacts(agent_id=a) for a in facts["agents"]},
            bad_lines=len(facts["bad_line_numbers"]),
            bad_line_numbers=facts["bad_line_numbers"],
            torn_line=facts["torn_line"],
        )
        return getattr(self, name)


_UNDAMAGED = '"bad_line_numbers":[],"torn_line":null'
"""What an entry's facts JSON holds when its log had no damaged line (``orjson``'s spelling)."""


def with_damaged_lines(records: Iterable[RunRecord]) -> list[RunRecord]:
    """The records whose log may have damaged lines: a cached one's JSON is not decoded for it."""
    return [r for r in records if not (isinstance(r, _Light) and _UNDAMAGED in r._json)]


def with_not_labels(records: Iterable[RunRecord]) -> list[RunRecord]:
    """The records whose ``labels.json`` may hold a value that is no label (as above)."""
    return [r for r in records if not (isinstance(r, _Light) and '"not_labels":{}' in r._json)]


def _project(record: RunRecord, stamped: str) -> dict[str, list[dict[str, Any]]]:
    """One run's cache rows per table: its run row (with its stamp and facts), round, agent."""
    tables = {
        "run": [run_row(record, None, False)],
        "round": round_rows(record, None, False),
        "agent": agent_rows(record, None, False),
    }
    out: dict[str, list[dict[str, Any]]] = {}
    for table, rows in tables.items():
        out[table] = []
        for row in rows:
            cells: dict[str, Any] = {_RUN: record.run_id}
            if table == "run":
                cells[_STAMP] = stamped
                cells[_RECORD] = _record_facts(record)
            _encode(row, cells)
            out[table].append(cells)
    return out


_SIMPLE = {bool: _PRESENT | _BOOL, int: _PRESENT | _INT, float: _PRESENT | _FLOAT}
_KIND_NAMES: dict[str, str] = {}
"""Each column's kind column (``_KIND + column``), spelled once per process."""


def _encode(row: dict[str, Any], cells: dict[str, Any]) -> None:
    """Put each cell of ``row`` into ``cells`` as :func:`_text` and :func:`_kind` say.

    The same values as calling both per cell, found with one type lookup: a cold query
    encodes about 150 cells of each of thousands of runs.
    """
    for column, value in row.items():
        named = _KIND_NAMES.get(column)
        if named is None:
            named = _KIND_NAMES[column] = _KIND + column
        if value is None:
            cells[column], cells[named] = None, _PRESENT
            continue
        kind = type(value)
        if kind is str:
            cells[column] = value
            cells[named] = _PRESENT | _STR
        elif kind in _SIMPLE:
            cells[column] = ("true" if value else "false") if kind is bool else str(value)
            cells[named] = _SIMPLE[kind]
        else:
            cells[column] = _text(value, _PRESENT | _OTHER)
            cells[named] = _PRESENT | _OTHER


def _frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Cache rows as a frame: text cells String, kinds UInt8 (a cell a row lacks is null)."""
    columns = dict.fromkeys(chain.from_iterable(rows))  # every row's columns, in order met
    schema = {c: pl.UInt8 if c.startswith(_KIND) else pl.String for c in columns}
    return pl.from_dicts(rows, schema=schema)


_FLUSH_ROWS = 2_000
"""Rows of freshly read runs held as dicts before they are made a frame (memory)."""


@dataclass
class Projection:
    """The cache of one runs directory for one query: read once, stamped, refreshed, written.

    Use :meth:`load` as :func:`~glossogen.export.select_runs`'s ``load``; then :meth:`save`
    and :meth:`grain_frame` for the selected records.
    """

    runs_dir: str
    entries: dict[str, tuple[str, str]]
    """Run id to its cached (stamp, facts JSON)."""
    cached: dict[str, pl.DataFrame] = field(default_factory=dict)
    """The cache file's tables."""
    fresh: dict[str, list[pl.DataFrame]] = field(default_factory=dict)
    """Per table, the rows of the runs read this time (frames of up to :data:`_FLUSH_ROWS`)."""
    pending: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    read: set[str] = field(default_factory=set)
    """Runs read this time."""
    keep: set[str] = field(default_factory=set)
    """Runs read this time that are ended: written to the cache."""
    stale: set[str] = field(default_factory=set)
    """Cached runs whose stamp no longer matches."""
    touched: set[str] = field(default_factory=set)
    merged: dict[str, pl.DataFrame] = field(default_factory=dict)
    real_root: str | None = None
    """The runs dir's real path (links resolved), found at the first run's place."""
    linked: dict[str, bool] = field(default_factory=dict)
    """Per scenario, whether its folder is a link."""

    @classmethod
    def open(cls, runs_dir: str) -> Projection:
        """Read ``runs_dir``'s cache (an empty one when there is none or any part is bad)."""
        empty = pl.DataFrame(schema=dict.fromkeys(_META[1:], pl.String))
        try:
            with zipfile.ZipFile(cache_path(runs_dir)) as archive:
                cached = {t: pl.read_parquet(io.BytesIO(archive.read(f"{t}.parquet")))
                          for t in _TABLES}  # fmt: skip
            runs = cached["run"]
            if any(_RUN not in f.columns for f in cached.values()) or _RECORD not in runs.columns:
                raise ValueError("not a projection")
        except (OSError, KeyError, ValueError, zipfile.BadZipFile, pl.exceptions.PolarsError):
            return cls(runs_dir=runs_dir, entries={}, cached=dict.fromkeys(_TABLES, empty))
        entries = dict(
            zip(runs.get_column(_RUN).to_list(),
                zip(runs.get_column(_STAMP).to_list(), runs.get_column(_RECORD).to_list(),
                    strict=True),
                strict=True)
        )  # fmt: skip
        return cls(runs_dir=runs_dir, entries=entries, cached=cached)

    def load(self, store: Any, run_id: str) -> RunRecord:
        """Return ``run_id``'s record: from the cache when its stamp matches, else read.

        A run read afresh is projected at once and returned as a light record too, so the
        full records of a cold selection are never all held at once.

        Raises:
            FileNotFoundError, ValueError, StorageError: as :func:`~glossogen.export.load_run`.
        """
        from glossogen.export import load_run

        self.touched.add(run_id)
        scenario, _, name = run_id.partition("/")
        stamped = stamp(f"{self.runs_dir}/{scenario}/{name}", scenario)
        entry = self.entries.get(run_id)
        if (entry is not None and entry[0] == stamped and not stamped.startswith("-")
                and _DAMAGE_FACTS in entry[1] and _FLAG_FACTS in entry[1]
                and _LABEL_FACTS in entry[1]):  # fmt: skip
            return _Light(run_id, entry[1], self._place(run_id))
        if entry is not None:
            self.stale.add(run_id)
        record = load_run(store, run_id)
        tables = _project(record, stamped)
        self.read.add(run_id)
        if record.status not in _UNCACHED_STATUSES:
            self.keep.add(run_id)
        for table, rows in tables.items():
            pending = self.pending.setdefault(table, [])
            pending += rows
            if len(pending) >= _FLUSH_ROWS:
                self.fresh.setdefault(table, []).append(_frame(pending))
                self.pending[table] = []
        return _Light(run_id, tables["run"][0][_RECORD], self._place(run_id))

    def _place(self, run_id: str) -> str:
        """``run_id``'s folder's real path, as :func:`~glossogen.storage.resolved` spells it.

        The runs dir's real path joined with the run id when neither the scenario's folder
        nor the run's is a link (one ``lstat`` a run, the scenario's once); else resolved.
        """
        scenario = run_id.partition("/")[0]
        if self.real_root is None:
            self.real_root = os.path.realpath(self.runs_dir)
        linked = self.linked.get(scenario)
        if linked is None:
            linked = self.linked[scenario] = os.path.islink(os.path.join(self.runs_dir, scenario))
        run_dir = os.path.join(self.runs_dir, run_id)
        if linked or os.path.islink(run_dir):
            return resolved(run_dir)
        return os.path.join(self.real_root, run_id)

    def scored(self, records: Iterable[RunRecord]) -> set[str]:
        """The runs of ``records`` whose run row says they have a report (``has_evaluation``)."""
        runs = self._current("run")
        if "has_evaluation" not in runs.columns:
            return set()
        ids = [r.run_id for r in records]
        held = runs.filter(pl.col(_RUN).is_in(ids) & (pl.col("has_evaluation") == "true"))
        return set(held.get_column(_RUN).to_list())

    def _current(self, table: str) -> pl.DataFrame:
        """The cache's ``table`` with this query's reads in: stale and re-read runs replaced."""
        if table not in self.merged:
            frame = self.cached[table]
            drop = self.stale | self.read
            if drop and frame.height:
                frame = frame.filter(~pl.col(_RUN).is_in(list(drop)))
            parts = [*self.fresh.get(table, [])]
            if self.pending.get(table):
                parts.append(_frame(self.pending[table]))
            if parts:
                frame = pl.concat([frame, *parts], how="diagonal")
            self.merged[table] = frame
        return self.merged[table]

    def save(self) -> list[str]:
        """Write the cache when this query read a run to keep or found one stale or gone.

        An entry is dropped when its run was not listed this time and its log is gone. The
        write is atomic (a temporary file moved over the old one). A cache that cannot be
        written (a read-only runs directory, ``.glossogen`` a file, the cache's path a folder)
        is left as it is and the answer is unchanged: read-only says nothing, any other
        failure is one note.

        Returns:
            The notes (none, or the one saying the cache was not written and why).
        """
        gone = [
            r for r in self.entries
            if r not in self.touched and not os.path.exists(
                os.path.join(self.runs_dir, r, f"{r.split('/', 1)[0]}.jsonl"))
        ]  # fmt: skip
        if not self.keep and not self.stale and not gone:
            return []
        drop = list(set(gone) | (self.read - self.keep))
        path = cache_path(self.runs_dir)
        folder = os.path.dirname(path)
        try:
            os.makedirs(folder, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=".projection-", suffix=".tmp", dir=folder)
            try:
                os.chmod(temp, 0o666 & ~_umask())  # mkstemp makes it 0600; a new file's mode
                with os.fdopen(fd, "wb") as out, zipfile.ZipFile(out, "w") as archive:
                    for table in _TABLES:
                        frame = self._current(table)
                        if drop:
                            frame = frame.filter(~pl.col(_RUN).is_in(drop))
                        data = io.BytesIO()
                        frame.write_parquet(data, compression="zstd", statistics=False)
                        archive.writestr(f"{table}.parquet", data.getvalue())
                os.replace(temp, path)
            except BaseException:
                os.unlink(temp)
                raise
        except PermissionError:
            return []
        except OSError as exc:
            where = os.path.relpath(path, self.runs_dir)
            why = exc.strerror or type(exc).__name__
            if os.path.exists(folder) and not os.path.isdir(folder):
                why = f"{os.path.relpath(folder, self.runs_dir)} is a file"
            return [f"answered without the cache: {where} cannot be written ({why})"]
        return []

    def grain_frame(self, records: Iterable[RunRecord], grain: str) -> pl.DataFrame:
        """The rows of ``grain`` (run, round or agent) of ``records``, as the export builds them.

        Equal to :func:`glossogen.analysis.grain_frame` of the same records read from their
        logs: the same columns in the same order, typed by the same rule, rows in record order.
        """
        order = pl.DataFrame(
            {_RUN: [r.run_id for r in records]}, schema={_RUN: pl.String}
        ).with_row_index("__pos")
        runs = _rows(self._current("run"), order)
        if grain == "run":
            return _typed(runs, _HEADS["run"])
        own = _typed(_rows(self._current(grain), order), _HEADS[grain])
        context_kinds = [
            c for c in runs.columns
            if c.startswith(_KIND) and not c.removeprefix(_KIND).startswith(METRIC_PREFIXES)
        ]  # fmt: skip
        texts = [c.removeprefix(_KIND) for c in context_kinds]
        context = _typed(runs.select([_RUN, *context_kinds,
                                      *(c for c in texts if c in runs.columns)]),
                         ["run_id"], context=True)  # fmt: skip
        return with_context(own, context)


def _rows(frame: pl.DataFrame, order: pl.DataFrame) -> pl.DataFrame:
    """The rows of the ordered runs, in their order (a run's rows in build order).

    Only the columns some of the table's rows hold are kept (a stale run's may be gone).
    """
    rows = frame.select([c for c in frame.columns if frame[c].null_count() < frame.height])
    if _RUN not in rows.columns:  # no row at all
        rows = pl.DataFrame(schema={_RUN: pl.String})
    return (
        rows.join(order, on=_RUN, how="inner", maintain_order="left")
        .sort("__pos", maintain_order=True)
        .drop("__pos")
    )


def _typed(rows: pl.DataFrame, head: list[str], context: bool = False) -> pl.DataFrame:
    """The frame of cached ``rows``: each column the selected rows hold, typed by their kinds.

    ``context``: the run context repeated on other grains (``run_id`` first, then
    :func:`~glossogen.export._frames.context_columns`' order).
    """
    kinds = [c for c in rows.columns if c.startswith(_KIND)]
    # No selected row (say unscored runs at the round grain, while the cache holds other
    # runs' rows): no kind is set, as the cold build sees no value.
    unions = rows.select(pl.col(kinds).fill_null(0).bitwise_or()).row(0) if rows.height else ()
    bits = {c.removeprefix(_KIND): int(b) for c, b in zip(kinds, unions, strict=False) if b}
    if context:
        columns = ["run_id", *context_columns([bits])]
    else:
        columns = ordered_columns([bits], head)
    if not rows.height:  # as frame_from_rows types a column of no value: Null
        return pl.DataFrame(schema=dict.fromkeys(columns, pl.Null))
    return rows.select([_column(c, bits.get(c, 0)) for c in columns])


def _column(name: str, bits: int) -> pl.Expr:
    """Column ``name`` typed as :func:`~glossogen.export._cells.typed_series` types its values."""
    text = pl.col(name)
    values = bits & ~_PRESENT
    if not values:
        return pl.lit(None, dtype=pl.Null).alias(name)
    if values == _BOOL:
        return (text == "true").alias(name)
    if not values & ~_INT:
        return text.cast(pl.Int64).alias(name)
    if not values & ~(_INT | _FLOAT):
        return text.cast(pl.Float64).alias(name)
    return text.alias(name)


__all__ = ["CACHED_GRAINS", "CACHE_FILE", "CACHE_FOLDER", "Projection", "cache_path", "stamp"]
