"""The one reading of a run id a user sent: the folder it names, or why it names none.

Every surface that takes a run id (``glossogen stop``, ``export``'s and ``evaluate``'s
``--run-id``, REST's run routes and export selection, every MCP tool that names a run)
resolves it here, so a bad one is worded and coded alike everywhere (:class:`RunIdRefused`):

- malformed (:func:`~glossogen.storage.run_id_refused`: not UTF-8 text, not shaped
  ``<scenario>/<run_dir_name>``, a path): the id quoted as sent; the CLI exits 64;
- well-shaped but naming no run folder (``veyru/abc``: its second part is no unix timestamp,
  so no run is ever stored under it; ``veyru/1`` where no run is): ``run ids that no longer
  resolve: <id>``, as an id of a run since deleted; the CLI exits 66.

Whether the folder is there (a log, a claim) is each operation's own reading; one that finds
none says it with :meth:`RunIdRefused.no_run`, in the same words.
"""

from __future__ import annotations

from typing import Literal

from glossogen import exit_codes
from glossogen.refusals import Refusal, path_not_text, shown_path
from glossogen.storage._folder import RunFolder, run_id_refused
from glossogen.storage._fs import join

RunIdFault = Literal["malformed", "no_run"]
"""Why a run id resolves to no run folder: it is not a run id, or no run is stored under it."""


class RunIdRefused(ValueError):
    """A run id that names no run folder; ``str()`` is the one line every surface says.

    Attributes:
        run_id: The id as sent.
        fault: ``malformed`` or ``no_run``.
        refusal: The malformed id's refusal (its field and value, as sent); None for
            ``no_run``, whose line names the id alone (``run ids that no longer resolve: x``).
    """

    def __init__(self, run_id: str, fault: RunIdFault, refusal: Refusal | None = None) -> None:
        """Keep the id, the fault and (malformed) its refusal; word the line."""
        line = refusal.worded() if refusal is not None else no_run_line([run_id])
        super().__init__(line)
        self.run_id = run_id
        self.fault: RunIdFault = fault
        self.refusal = refusal

    def __reduce__(self) -> tuple[type[RunIdRefused], tuple[str, RunIdFault, Refusal | None]]:
        """Pickled whole (a Prefect task's failure carries it): its id, fault and refusal."""
        return type(self), (self.run_id, self.fault, self.refusal)

    @classmethod
    def no_run(cls, run_id: str) -> RunIdRefused:
        """A well-shaped id under which no run is (no folder, or neither log nor claim)."""
        return cls(run_id, "no_run")

    @property
    def exit_code(self) -> int:
        """The CLI's exit code: 64 for a malformed id, 66 for an id that names no run."""
        return int(exit_codes.USAGE if self.fault == "malformed" else exit_codes.UNREADABLE)


def no_run_line(run_ids: list[str]) -> str:
    """The one line of run ids that name no run: ``run ids that no longer resolve: a, b``."""
    return f"run ids that no longer resolve: {', '.join(run_ids)}"


def resolve_run_id(
    runs_dir: str, run_id: str, field: str = "run_id", sent: str | None = None
) -> RunFolder:
    """The folder ``run_id`` names under ``runs_dir``, read from the id alone (nothing is read).

    Args:
        runs_dir: The runs directory (local path or fsspec URL) the id is relative to.
        run_id: ``<scenario>/<run_dir_name>``, as sent.
        field: The request field that carried it (``run_id``, ``run_ids``, ``run_dir``,
            ``source_run_id``), which a malformed id's refusal names.
        sent: What the refusal quotes or names when the user sent more than the id
            (``glossogen stop``'s run folder, ``/tmp/runs/abc``: never ``runs/abc``, its last
            two parts); default ``run_id``.

    Raises:
        RunIdRefused: ``malformed`` (:func:`~glossogen.storage.run_id_refused`), or
            ``no_run`` for a well-shaped id whose folder name is no unix timestamp (no run is
            ever stored there: :meth:`RunFolder.names_run`).
    """
    refused = None if sent is None else path_not_text(field, sent)  # the whole path typed
    refused = refused or run_id_refused(field, run_id)
    if refused is not None:
        if sent is not None:  # the whole path the user typed, as typed
            refused = refused.model_copy(update={"value": shown_path(sent)})
        raise RunIdRefused(run_id, "malformed", refused)
    scenario, _, name = run_id.partition("/")
    if not RunFolder.names_run(scenario, name):
        raise RunIdRefused.no_run(run_id if sent is None else sent)
    return RunFolder(run_id=run_id, url=join(runs_dir, scenario, name), timestamp=int(name))
