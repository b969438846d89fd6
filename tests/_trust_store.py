"""The ``SSL_CERT_FILE`` of every process the test command starts: one certificate, no server's.

Every HTTP client the suite's processes open builds a verifying TLS context as it is made, though
each talks plain HTTP to 127.0.0.1 (the stub model servers, the Prefect servers, moto, the run
browser): pydantic-ai's client of each hosted model it builds (``httpcore2``), Prefect's clients
and the transports its ``prefect.blocks.webhook`` makes as it is imported, each ``httpx.get`` of
a test. Each such context loads the file ``SSL_CERT_FILE`` names (on the machines this project
runs on, Debian's bundle of about 150 certificates; else certifi's): about 20 ms of CPU. With
:data:`NO_SERVER_TRUSTED` it takes 0.3 ms. A py-spy profile of a whole run of the test command
(stop 56) found TLS contexts in 2% of all samples, half of them pydantic-ai's.

So :func:`trust_no_server` sets ``SSL_CERT_FILE`` (read by OpenSSL, ``httpx`` and
``httpcore2``) to :data:`NO_SERVER_TRUSTED`, whatever the machine set it to: these machines set it
in every shell, so a value kept as found would have left the whole cost in place. The value it
replaced is kept in :data:`MACHINE_CERT_FILE`, and :func:`machine_trust` gives it back to a
subprocess that must reach the internet (``uv build`` fetching its build backend). It sets
``PREFECT_API_SSL_CERT_FILE`` too, unless it is set or ``PREFECT_API_URL`` names an ``https://``
server. ``SSL_CERT_DIR`` is left as it is: OpenSSL looks a certificate up there only when it
verifies one, which no test does.

The file is the product's own (``glossogen.launch._process.PLAIN_HTTP_CA_FILE``): a self-signed
certificate whose key was discarded, so a client of ``httpx`` or pydantic-ai that reached an
``https://`` URL in a test would fail its verification, loudly.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

NO_SERVER_TRUSTED = Path(__file__).resolve().parents[1] / "glossogen/launch/_plain_http_api.pem"
CERT_FILE = "SSL_CERT_FILE"
PREFECT_CERT_FILE = "PREFECT_API_SSL_CERT_FILE"
MACHINE_CERT_FILE = "GLOSSOGEN_TESTS_MACHINE_SSL_CERT_FILE"
"""Test-only: the ``SSL_CERT_FILE`` the test command found ("" when it was not set)."""


def trust_no_server(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables that make ``environ``'s processes trust :data:`NO_SERVER_TRUSTED` only."""
    ours = str(NO_SERVER_TRUSTED)
    if environ.get(CERT_FILE) == ours:
        return {}  # set already (the test command's, seen again by conftest)
    changed = {CERT_FILE: ours, MACHINE_CERT_FILE: environ.get(CERT_FILE, "")}
    api = environ.get("PREFECT_API_URL", "").strip().lower()
    if PREFECT_CERT_FILE not in environ and not api.startswith("https://"):
        changed[PREFECT_CERT_FILE] = ours
    return changed


def machine_trust(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with the ``SSL_CERT_FILE`` the machine had, and without :data:`NO_SERVER_TRUSTED`."""
    ours = str(NO_SERVER_TRUSTED)
    restored = {
        name: value
        for name, value in environ.items()
        if value != ours and name != MACHINE_CERT_FILE
    }
    if environ.get(MACHINE_CERT_FILE):
        restored[CERT_FILE] = environ[MACHINE_CERT_FILE]
    return restored
