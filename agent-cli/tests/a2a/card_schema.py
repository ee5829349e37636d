"""Check an agent card against A2A v1.0's own schema.

The specification's normative schema is its proto (a2a.proto, package
lf.a2a.v1); its JSON Schema is generated from it when the documentation is
built and is shipped by no registry. So the schema is generated here, the
same way, from the proto as A2A's Python SDK (a2a-sdk, pinned in
tests-deps/python/clients) ships it compiled: ProtoJSON names (camelCase),
the fields marked REQUIRED required (a required list non-empty), enums as
their names, a oneof as exactly one of its fields, and no field the proto
does not have.

python card_schema.py CARD.json
prints {"valid": bool, "errors": [...], "required": [...]} on one line.
"""
import json
import sys

import jsonschema
from google.api import field_behavior_pb2
from google.protobuf.descriptor import FieldDescriptor as F

from a2a.types import a2a_pb2

SCALARS = {
    F.TYPE_STRING: {"type": "string"},
    F.TYPE_BOOL: {"type": "boolean"},
    F.TYPE_INT32: {"type": "integer"},
    F.TYPE_SINT32: {"type": "integer"},
    F.TYPE_UINT32: {"type": "integer", "minimum": 0},
    # ProtoJSON writes 64-bit integers as strings and reads either.
    F.TYPE_INT64: {"type": ["string", "integer"]},
    F.TYPE_UINT64: {"type": ["string", "integer"]},
    F.TYPE_DOUBLE: {"type": "number"},
    F.TYPE_FLOAT: {"type": "number"},
    F.TYPE_BYTES: {"type": "string", "contentEncoding": "base64"},
}
WELL_KNOWN = {
    "google.protobuf.Timestamp": {"type": "string", "format": "date-time"},
    "google.protobuf.Struct": {"type": "object"},
    "google.protobuf.Value": {},
    "google.protobuf.ListValue": {"type": "array"},
}


def required(field):
    behaviors = field.GetOptions().Extensions[field_behavior_pb2.field_behavior]
    return field_behavior_pb2.REQUIRED in behaviors


def field_schema(field, defs):
    if field.type == F.TYPE_MESSAGE and field.message_type.GetOptions().map_entry:
        value = field.message_type.fields_by_name["value"]
        return {"type": "object", "additionalProperties": field_schema(value, defs)}
    if field.type == F.TYPE_MESSAGE:
        item = reference(field.message_type, defs)
    elif field.type == F.TYPE_ENUM:
        item = {"type": "string", "enum": [v.name for v in field.enum_type.values]}
    else:
        item = dict(SCALARS[field.type])
    if field.is_repeated:
        listed = {"type": "array", "items": item}
        if required(field):
            listed["minItems"] = 1
        return listed
    if required(field) and item.get("type") == "string" and "enum" not in item:
        item["minLength"] = 1
    return item


def reference(message, defs):
    if message.full_name in WELL_KNOWN:
        return dict(WELL_KNOWN[message.full_name])
    if message.name not in defs:
        defs[message.name] = {}  # taken, for messages that hold themselves
        schema = {
            "type": "object",
            "properties": {f.json_name: field_schema(f, defs) for f in message.fields},
            "additionalProperties": False,
        }
        oneofs = [o for o in message.oneofs if not o.name.startswith("_")]
        in_oneof = {f.json_name for o in oneofs for f in o.fields}
        needed = [f.json_name for f in message.fields if required(f) and f.json_name not in in_oneof]
        if needed:
            schema["required"] = needed
        if oneofs:
            schema["allOf"] = [{"oneOf": [{"required": [f.json_name]} for f in o.fields]} for o in oneofs]
        defs[message.name] = schema
    return {"$ref": f"#/$defs/{message.name}"}


def main(path):
    defs = {}
    root = reference(a2a_pb2.AgentCard.DESCRIPTOR, defs)
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **root, "$defs": defs}
    with open(path, encoding="utf-8") as f:
        card = json.load(f)
    validator = jsonschema.Draft202012Validator(schema)
    errors = [f"{'/'.join(map(str, e.absolute_path)) or '(card)'}: {e.message}" for e in validator.iter_errors(card)]
    print(json.dumps({"valid": not errors, "errors": errors, "required": defs["AgentCard"]["required"]}))


main(sys.argv[1])
