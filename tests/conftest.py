"""Session-wide fixtures: real servers on 127.0.0.1 (Prefect, moto S3), loaded as plugins."""

pytest_plugins = [
    "tests.fixtures.s3_server",
    "tests.fixtures.prefect_server",
    "tests.fixtures.model_stubs",
    "tests.fixtures.ports",
]
