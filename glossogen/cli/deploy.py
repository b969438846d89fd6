"""``glossogen deploy``: register every deployment of ``prefect.yaml`` on the Prefect server.

It applies the work pools and limits first (``glossogen pools apply``: a deployment on a pool
that does not exist would not run), then runs ``prefect --no-prompt deploy --all`` in the
folder holding ``prefect.yaml``: Prefect's own command, so the file stays the one source. A
deployment whose entrypoint file is missing (a checkout without that flow) is skipped with a
warning, and the others are registered by name.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import typer

from glossogen import exit_codes
from glossogen.cli._refusals import error
from glossogen.strict_yaml import DuplicateKeyError, YamlError, load_yaml


def _error(message: str) -> None:
    error(message)


def project_dir(start: Path) -> Path | None:
    """Return the nearest folder at or above ``start`` holding ``prefect.yaml``.

    Falls back to the checkout's own (beside the ``glossogen`` package), else None.
    """
    for folder in (start, *start.parents):
        if (folder / "prefect.yaml").is_file():
            return folder
    checkout = Path(__file__).resolve().parents[2]
    return checkout if (checkout / "prefect.yaml").is_file() else None


class ProjectError(ValueError):
    """A ``prefect.yaml`` that cannot be read or is malformed; one line naming what is wrong."""

    def __init__(self, message: str, exit_code: int = int(exit_codes.REFUSED)) -> None:
        """Keep ``message`` and the exit code (65 malformed, 66 unreadable)."""
        super().__init__(message)
        self.exit_code = exit_code


def _read_project(path: Path) -> list[dict[str, object]]:
    """The ``deployments`` of ``path``, each a mapping with a name, names distinct.

    Raises:
        ProjectError: unreadable (66); not YAML, a key written twice, not a mapping, or a
            deployment with no name or a name written twice (65).
    """
    try:
        spec = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ProjectError(f"cannot read {path}: {reason}", int(exit_codes.UNREADABLE)) from None
    except DuplicateKeyError as exc:
        raise ProjectError(f"{path}: {exc}") from None
    except YamlError as exc:
        raise ProjectError(f"{path} is not YAML: {exc}") from None
    spec = {} if spec is None else spec
    if not isinstance(spec, dict):
        raise ProjectError(f"{path} must be a mapping of keys to values")
    deployments = spec.get("deployments") or []
    if not isinstance(deployments, list):
        raise ProjectError(f"{path}: deployments must be a list")
    first: dict[str, int] = {}
    for index, deployment in enumerate(deployments, start=1):
        name = deployment.get("name") if isinstance(deployment, dict) else None
        if not isinstance(name, str) or not name:
            raise ProjectError(f"{path}: deployment {index} must be a mapping with a name")
        if name in first:
            raise ProjectError(
                f"{path}: deployment name {name!r} is written twice "
                f"(deployments {first[name]} and {index})"
            )
        first[name] = index
    return deployments


def deployable(folder: Path) -> tuple[list[str], list[str]]:
    """Return the deployments of ``folder/prefect.yaml`` that can be registered.

    Returns:
        ``(names, skipped)``: names whose entrypoint file exists, and one line per deployment
        skipped because its file does not.

    Raises:
        ProjectError: the file is unreadable (66) or malformed (65); see :func:`_read_project`.
    """
    names: list[str] = []
    skipped: list[str] = []
    for deployment in _read_project(folder / "prefect.yaml"):
        path = str(deployment.get("entrypoint", "")).split(":", 1)[0]
        if (folder / path).is_file():
            names.append(str(deployment["name"]))  # checked a str by _read_project
        else:
            skipped.append(f"{deployment['name']}: {path} does not exist")
    return names, skipped


def deploy(
    project: str = typer.Option(
        "", "--project-dir", help="Folder holding prefect.yaml (default: nearest one, or ours)."
    ),
    limits: str = typer.Option("", "--limits", help="Limits file for the pools (see `pools`)."),
    pools: bool = typer.Option(
        True, "--pools/--no-pools", help="Apply the work pools and limits first."
    ),
) -> int:
    """Register every deployment of prefect.yaml (simulate-<provider>, sweep, reconcile, ...)."""
    folder = Path(project) if project else project_dir(Path.cwd())
    if folder is None or not (folder / "prefect.yaml").is_file():
        _error(f"no prefect.yaml in {folder or Path.cwd()} or above")
        return int(exit_codes.UNREADABLE)
    try:  # read before pools or the server are touched
        names, skipped = deployable(folder)
    except ProjectError as exc:
        _error(str(exc))
        return exc.exit_code
    for line in skipped:
        print(f"glossogen: warning: skipping deployment {line}", file=sys.stderr, flush=True)
    if not names:
        _error(f"no deployment of {folder / 'prefect.yaml'} has its entrypoint file")
        return int(exit_codes.UNREADABLE)
    if pools:
        from glossogen.cli.pools import apply

        code = apply(limits=limits)
        if code:
            return code
    else:
        from glossogen.cli._prefect_api import refuse_unreachable_api

        refused = refuse_unreachable_api()
        if refused is not None:
            return refused
    which = ["--all"] if not skipped else [a for n in names for a in ("--name", n)]
    env = {**os.environ, "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING"}
    done = subprocess.run(  # noqa: S603 (Prefect's own CLI, no shell)
        [sys.executable, "-m", "glossogen._prefect_cli", "--no-prompt", "deploy", *which],
        cwd=folder,
        env=env,
        check=False,
    )
    if done.returncode:
        _error(f"prefect deploy --all failed in {folder} (exit {done.returncode})")
        return int(exit_codes.TRANSPORT)
    return 0
