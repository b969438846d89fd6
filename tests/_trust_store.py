"""The trust store of every process the test command starts: one certificate that trusts no server.

Every HTTP client the suite's processes open builds a verifying TLS context as it is made, though
each talks plain HTTP to 127.0.0.1 (the stub model servers, the Prefect servers, moto, the run
browser): pydantic-ai's client of each hosted model it builds (``httpcore2``), Prefect's clients
and the transports its ``prefect.blocks.webhook`` makes as it is imported, each ``httpx.get`` of
a test. Each such context loads the machine's or certifi's bundle of about 150 certificates,
about 20 ms of CPU; with :data:`NO_SERVER_TRUSTED` it takes 0.3 ms. A py-spy profile of a whole
run of the test command (stop 56) found TLS contexts in 2% of all samples, three quarters of them
pydantic-ai's. OpenSSL, ``httpx`` and ``httpcore2`` read ``SSL_CERT_FILE``; Prefect's clients
read ``PREFECT_API_SSL_CERT_FILE``.

The file is the product's own (``glossogen.launch._process.PLAIN_HTTP_CA_FILE``): a self-signed
certificate whose key was discarded, so a test that reached an ``https://`` URL would fail its
verification, loudly. A variable the environment already sets is kept. A test whose subprocess
must reach the internet (``uv build`` fetching its build backend) gives it
:func:`machine_trust`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

NO_SERVER_TRUSTED = Path(__file__).resolve().parents[1] / "glossogen/launch/_plain_http_api.pem"
VARIABLES = ("SSL_CERT_FILE", "PREFECT_API_SSL_CERT_FILE")


def trust_no_server(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of :data:`VARIABLES` that ``environ`` does not set, set to the one file."""
    return {name: str(NO_SERVER_TRUSTED) for name in VARIABLES if name not in environ}


def machine_trust(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without the variables that name :data:`NO_SERVER_TRUSTED`."""
    return {
        name: value
        for name, value in environ.items()
        if not (name in VARIABLES and value == str(NO_SERVER_TRUSTED))
    }
