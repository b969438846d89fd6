"""Built-in metrics, one short module per family; importing this package registers them."""

from glossogen.evaluation.metrics import (  # noqa: F401 (imported to register)
    budget,
    compression,
    cost,
    entropy,
    failures,
    length,
    probe,
    repetition,
    shorthand,
    success,
    vocabulary,
)
