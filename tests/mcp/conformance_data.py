"""What the MCP conformance suite's server scenarios expect of the tools (names, descriptions,
schemas, answers), after its reference server (``examples/servers/typescript/
everything-server.ts`` of @modelcontextprotocol/conformance 0.1.13). Plain data, no tether
import: ``conformance_tools.py`` (tether tools) and ``conformance_upstream.py`` (the bare SDK,
spawned by the proxy without tether on its path) both read it.
"""

from __future__ import annotations

from typing import Any

PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5E"
       "rkJggg==")
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
SIMPLE_TEXT = "This is a simple text response for testing."
ERROR_TEXT = "This tool intentionally returns an error for testing"
EMBEDDED = ("test://embedded-resource", "text/plain", "This is an embedded resource content.")
MIXED = ("test://mixed-content-resource", "application/json", '{"test":"data","value":123}')
LOG_LINES = ("Tool execution started", "Tool processing data", "Tool execution completed")
ELICITATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"username": {"type": "string", "description": "User's response"},
                   "email": {"type": "string", "description": "User's email address"}},
    "required": ["username", "email"]}
DEFAULTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "description": "User status",
                   "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "description": "Verification status",
                     "default": True}},
    "required": []}
ENUMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "description": "Select one option",
                           "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "description": "Select one option with titles",
                         "oneOf": [{"const": "value1", "title": "First Option"},
                                   {"const": "value2", "title": "Second Option"},
                                   {"const": "value3", "title": "Third Option"}]},
        "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
                       "enum": ["opt1", "opt2", "opt3"],
                       "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "description": "Select multiple options",
                          "minItems": 1, "maxItems": 3,
                          "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "description": "Select multiple options with titles",
                        "minItems": 1, "maxItems": 3,
                        "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                            {"const": "value2", "title": "Second Choice"},
                                            {"const": "value3", "title": "Third Choice"}]}}},
    "required": []}
SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"},
                                                           "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False}
DESCRIPTIONS = {
    "test_simple_text": "Tests simple text content response.",
    "test_image_content": "Tests image content response.",
    "test_audio_content": "Tests audio content response.",
    "test_embedded_resource": "Tests embedded resource content response.",
    "test_multiple_content_types":
        "Tests response with multiple content types (text, image, resource).",
    "test_tool_with_logging": "Tests tool that emits log messages during execution.",
    "test_tool_with_progress": "Tests tool that reports progress notifications.",
    "test_error_handling": "Tests error response handling.",
    "test_sampling": "Tests server-initiated sampling (LLM completion request).",
    "test_elicitation": "Tests server-initiated elicitation (user input request).",
    "test_elicitation_sep1034_defaults": "Tests elicitation with default values per SEP-1034.",
    "test_elicitation_sep1330_enums":
        "Tests elicitation with enum schema improvements per SEP-1330.",
    "json_schema_2020_12_tool": "Tool with JSON Schema 2020-12 features",
}

# SEP-2322 (input-required-result-*): the asks of each tool, in order, as (method, key, what);
# ``what`` is an elicitation's (message, schema) or a sampling request's prompt. tether's
# Caller has no roots, so neither has any tool here (the suite's _list_roots and the roots
# part of _multiple_inputs stay unanswered).
def _form(field: str, kind: str) -> dict[str, Any]:
    return {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}


NAME_ASK = ("elicitation/create", "user_name", ("What is your name?", _form("name", "string")))
OK_ASK = ("elicitation/create", "confirm", ("Please confirm", _form("ok", "boolean")))
CAPITAL_ASK = ("sampling/createMessage", "capital_question", "What is the capital of France?")
IRR_ASKS: dict[str, list[tuple[str, str, Any]]] = {
    "test_input_required_result_elicitation": [NAME_ASK],
    "test_input_required_result_sampling": [CAPITAL_ASK],
    "test_input_required_result_request_state": [OK_ASK],
    "test_input_required_result_tampered_state": [OK_ASK],
    "test_input_required_result_multiple_inputs": [NAME_ASK, CAPITAL_ASK],
    "test_input_required_result_multi_round": [
        ("elicitation/create", "step1", ("What is your name?", _form("name", "string"))),
        ("elicitation/create", "step2", ("What is your favorite color?",
                                         _form("color", "string")))],
    "test_input_required_result_capabilities": [
        ("elicitation/create", "confirm", ("Please confirm", _form("ok", "boolean"))),
        CAPITAL_ASK],
}
IRR_DESCRIPTIONS = {name: f"SEP-2322: asks its client ({', '.join(k for _, k, _ in asks)})"
                    for name, asks in IRR_ASKS.items()}
