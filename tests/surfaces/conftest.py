"""The surface tests' shared source run, played once for the package on each worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.played_runs import play_run


@pytest.fixture(scope="package")
def played_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One scripted 2-round veyru run played for the package: the source the launch-, knobs- and
    evaluation-refusal tests each copy into their own runs folder (:func:`with_played_source`),
    instead of playing one each. Package-wide, so that the files that take it (``test_launch``,
    ``test_evaluate``) play it once on a worker, as the one file they were split from did."""
    return Path(play_run(str(tmp_path_factory.mktemp("played-source")), "veyru", rounds=2).url)
