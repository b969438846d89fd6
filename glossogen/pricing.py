"""Spend of one model call in USD, priced offline with genai-prices' bundled data.

Prices come from the genai-prices package (its snapshot shipped in the wheel; never updated at
run time). Providers the catalogue marks as not billed (scripted, self-hosted, ollama) cost 0.
A model genai-prices does not know returns None ("not costed"), never 0. A fine-tune
(``ft:<base>:...``) the catalogue does not list by its own name is priced as its base model.
An answered call of a billed model whose usage reads no token at all (the provider sent no
usage, or one that could not be read) is not costed either (None): it was paid, for what is
not known.
"""

from __future__ import annotations

from typing import Any

from glossogen.catalog import PROVIDER_SPECS, Provider
from glossogen.eventlog import logged_usd

FINE_TUNE_PREFIX = "ft:"


def base_model(model: str) -> str:
    """Return the model a fine-tune was trained from, or ``model`` itself when it is not one.

    A fine-tune is named ``ft:<base>:<org>:<suffix>:<id>`` (OpenAI's spelling); its base is the
    second field. A name with an empty second field is returned as is.
    """
    if not model.startswith(FINE_TUNE_PREFIX):
        return model
    return model.split(":")[1] or model


def price_call(
    provider: str,
    model: str,
    *,
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
    cache_write_1h_tokens: int = 0,
) -> float | None:
    """Return the USD cost of one call, or None when the model is not in the price catalogue.

    ``input_tokens`` already includes cache reads and writes, and ``cache_write_tokens`` the
    one-hour writes (pydantic-ai's and genai-prices' convention). Each part is priced at its
    own rate: genai-prices (0.2.x) takes the one-hour count as ``cache_write_1h_tokens`` and
    prices the rest of the writes at the five-minute rate. Unknown providers are not costed
    (None); a fine-tune the catalogue does not list is priced at its base model's rates when
    the catalogue has the base.
    """
    try:
        spec = PROVIDER_SPECS[Provider(provider)]
    except ValueError:
        return None
    if not spec.billed:
        return 0.0
    if spec.genai_prices_id is None:
        return None
    from genai_prices import Usage, calc_price  # on first price: a reader of logged spend never

    usage = Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read_tokens or None,
        cache_write_tokens=cache_write_tokens or None,
        cache_write_1h_tokens=cache_write_1h_tokens or None,
    )
    for ref in dict.fromkeys((model, base_model(model))):  # the name, then a fine-tune's base
        try:
            price = calc_price(usage, model_ref=ref, provider_id=spec.genai_prices_id)
        except LookupError:
            continue
        return logged_usd(float(price.total_price))
    return None


def usage_unread(provider: str, usage_tokens: tuple[int, int]) -> bool:
    """True when a billed model's answered call reports ``(input, output)`` tokens of none.

    Every request a model answers reads its prompt, so a usage of no token at all means the
    usage was not read (absent or malformed), not that the call was free.
    """
    try:
        billed = PROVIDER_SPECS[Provider(provider)].billed
    except ValueError:
        billed = True
    return billed and not any(usage_tokens)


def price_usage(provider: str, model: str, usage: Any) -> float | None:
    """Price one answered call from a pydantic-ai usage object (``RequestUsage``), USD.

    None when the model is not in the catalogue or its usage was not read
    (:func:`usage_unread`), never 0 for a billed model.
    """
    if usage_unread(provider, (usage.input_tokens, usage.output_tokens)):
        return None
    return price_call(
        provider,
        model,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cache_write_1h_tokens=usage.cache_write_1h_tokens,
    )


def price_answered(provider: str, model: str, usage: Any) -> float | None:
    """USD of the answered requests ``usage`` counts (a failed attempt's); 0.0 if none used a token.

    A call that failed before any answer used nothing and is not billed, even for a model the
    catalogue lacks; answers that came back are priced, usable or not (None when the model is
    not in the catalogue).
    """
    if not (usage.input_tokens or usage.output_tokens):
        return 0.0
    return price_usage(provider, model, usage)


def add_costs(costs: list[float | None]) -> float | None:
    """Sum USD costs; None (not costed) when any item is None, 0.0 for an empty list."""
    total = 0.0
    for cost in costs:
        if cost is None:
            return None
        total += cost
    return total
