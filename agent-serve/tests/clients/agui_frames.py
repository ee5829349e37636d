"""Every AG-UI frame a served agent sent, decoded by the protocol's own
models (`ag-ui-protocol` on PyPI, pinned in tests-deps/python/clients).

Usage: agui_frames.py FRAMES_JSON_FILE
The file holds {"events": [<every event>], "capabilities": {...}}. Each
event must decode as the `Event` union with no field the model does not
know (the models allow extra fields; a producer must not rely on that).
Prints "agui frames ok N"; exits non-zero on the first that does not.
"""
import json
import sys

from pydantic import BaseModel, TypeAdapter

from ag_ui.core import AgentCapabilities
from ag_ui.core.events import Event


def no_extra(model, where):
    """No field of `model`, or of the models it holds, is an unknown one."""
    extra = getattr(model, "model_extra", None) or {}
    assert not extra, f"{where}: unknown fields {sorted(extra)}"
    for name, value in model:
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, BaseModel):
                no_extra(item, f"{where}.{name}")


with open(sys.argv[1]) as f:
    frames = json.load(f)
adapter = TypeAdapter(Event)
for i, raw in enumerate(frames["events"]):
    event = adapter.validate_python(raw)
    assert getattr(event.type, "value", event.type) == raw["type"], raw
    no_extra(event, f"events[{i}] ({raw['type']})")
no_extra(AgentCapabilities.model_validate(frames["capabilities"]), "capabilities")
print(f"agui frames ok {len(frames['events'])}")
