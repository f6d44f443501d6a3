"""The origin tag every elicitation carries to the host (shared contract: 'Origin tag')."""

from __future__ import annotations

from typing import Any, Final

ORIGIN_META_KEY: Final = "dev.elicitation-gateway/origin"


def tag_origin(params: dict[str, Any], server: str, *, prefix_message: bool) -> dict[str, Any]:
    """`_meta` origin entry always; `[server] ` message prefix when `prefix_message`.

    Idempotent, so a message a server already prefixed is not prefixed twice.
    """
    meta = params.get("_meta")
    tagged = {**params, "_meta": {**(meta if isinstance(meta, dict) else {}), ORIGIN_META_KEY: {"server": server}}}
    if prefix_message:
        message = params.get("message")
        prefix = f"[{server}] "
        text = message if isinstance(message, str) else ""
        if not text.startswith(prefix):
            tagged["message"] = prefix + text
    return tagged
