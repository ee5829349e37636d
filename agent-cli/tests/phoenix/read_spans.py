"""Read a Phoenix project's spans back with Phoenix's own client.

python read_spans.py BASE_URL PROJECT MIN_SPANS
Polls (ingestion is asynchronous) until the project holds at least
MIN_SPANS spans, then prints them as one JSON line: [{name, span_kind,
parent_id, attributes}]. Exits 1 with the reason on stderr.
"""
import json
import sys
import time

from phoenix.client import Client

base, project, wanted = sys.argv[1], sys.argv[2], int(sys.argv[3])
client = Client(base_url=base)
spans = []
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        spans = client.spans.get_spans(project_identifier=project, limit=200)
    except Exception as error:  # the project appears with its first span
        spans = []
        last_error = error
    if len(spans) >= wanted:
        break
    time.sleep(0.5)
else:
    sys.exit(f"project {project} has {len(spans)} spans, not {wanted}")
print(json.dumps([
    {
        "name": s.get("name"),
        "span_kind": s.get("span_kind"),
        "parent_id": s.get("parent_id"),
        "attributes": s.get("attributes", {}),
    }
    for s in spans
]))
