"""A plain-HTTP Prefect API gets a one-certificate CA file, so Prefect's clients load no bundle.

``apply_prefect_defaults`` sets ``PREFECT_API_SSL_CERT_FILE`` to ``PLAIN_HTTP_CA_FILE`` only when
``PREFECT_API_URL`` is ``http://`` and the user set no CA file. Each case runs in a fresh
interpreter whose environment is given whole (the test session sets a CA file of its own).
"""

from __future__ import annotations

import os
import ssl
import subprocess
import sys

import pytest

from glossogen.launch._process import PLAIN_HTTP_CA_FILE

_SHOW = (
    "import os\n"
    "from glossogen.launch import apply_prefect_defaults\n"
    "apply_prefect_defaults()\n"
    "print(os.environ.get('PREFECT_API_SSL_CERT_FILE', 'unset'))\n"
)


def _ca_file_after_defaults(api_url: str | None, ca_file: str | None = None) -> str:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PREFECT_API_URL", "PREFECT_API_SSL_CERT_FILE")
    }
    if api_url is not None:
        env["PREFECT_API_URL"] = api_url
    if ca_file is not None:
        env["PREFECT_API_SSL_CERT_FILE"] = ca_file
    done = subprocess.run(
        [sys.executable, "-c", _SHOW], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.mark.parametrize("api_url", ["http://127.0.0.1:4200/api", " HTTP://prefect:4200/api"])
def test_a_plain_http_api_gets_the_one_certificate_file(api_url: str) -> None:
    assert _ca_file_after_defaults(api_url) == str(PLAIN_HTTP_CA_FILE)


@pytest.mark.parametrize("api_url", ["https://prefect.example.com/api", "", None])
def test_a_tls_or_unset_api_keeps_prefects_default(api_url: str | None) -> None:
    assert _ca_file_after_defaults(api_url) == "unset"


def test_a_ca_file_the_user_sets_is_kept() -> None:
    assert _ca_file_after_defaults("http://127.0.0.1:4200/api", "/etc/mine.pem") == "/etc/mine.pem"


def test_the_file_is_one_certificate_that_loads() -> None:
    context = ssl.create_default_context(cafile=str(PLAIN_HTTP_CA_FILE))
    assert context.cert_store_stats()["x509_ca"] == 1
