"""levy's MCP tools driven by the official MCP client library (PyPI `mcp`), over streamable HTTP and over stdio.

Usage: client.py BASE_URL LEVY_BINARY. Signs an account up over REST, then, as an agent would, lists the tools and
calls each of them; prints one JSON object of what it saw, which tests/server.rs checks. The input schemas are
compared here with the served OpenAPI document, read independently of levy's own mapping: a tool's schema must be its
operation's JSON body schema (its object alternative, for a body that may also be an array) or, for an operation
without a body, an object of its query parameters.
"""

import asyncio
import json
import sys
import urllib.request

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

BASE, LEVY = sys.argv[1], sys.argv[2]

CALCULATE = {"amount": "1000.00", "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "buyer-1",
             "transaction_type": "saas"}

# One valid call of every tool (the ones that need a key get the account's).
EXAMPLES = {
    "calculate_tax": CALCULATE,
    "ingest_transactions": dict(CALCULATE, external_tx_id="order-77"),
    "list_transactions": {"limit": 5, "role": "seller"},
    "refund_transaction": None,
    "get_transaction": None,
    "void_transaction": None,
    "get_liability_report": {"from": "2026-01-01", "to": "2026-12-31", "period": "quarter"},
    "mark_period_filed": {"state": "TX", "period": "2025-12"},
    "get_nexus": {},
    "configure_nexus": {"nexus": {"TX": {"hasNexus": True}}},
    "get_nexus_alerts": {},
    "log_trade": {"asset_symbol": "ETH", "trade_type": "buy", "quantity": 2, "price_per_unit": 1500,
                  "trade_date": "2026-01-05"},
    "list_trades": {"asset_symbol": "ETH"},
    "export_1099_da": {"year": 2026},
    "get_rates": {"state": "TX"},
    "get_local_rate": {"zip": "78701"},
    "get_capital_gains_rates": {"state": "CA"},
    "verify_rates": {"agent_id": "agent-1", "rates": {"TX": {"rate": 0.0625}}},
    "get_pricing": {},
    "get_usage": {},
    "get_optimization_report": {},
    "get_agents_guide": {},
    "check_health": {},
}


def rest(method, path, key=None, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method)
    req.add_header("content-type", "application/json")
    if key:
        req.add_header("x-api-key", key)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def resolve(schema, components):
    """The schema with every $ref (to components or to $defs) replaced by its target."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if ref is not None:
            name = ref.rsplit("/", 1)[1]
            return resolve(components[name], components)
        return {k: resolve(v, components) for k, v in schema.items() if k != "$defs"}
    if isinstance(schema, list):
        return [resolve(v, components) for v in schema]
    return schema


def with_parameters(schema, operation, place):
    """The object schema with the operation's parameters found in `place` as properties (required if they are)."""
    schema = dict(schema)
    props, required = dict(schema.get("properties", {})), list(schema.get("required", []))
    for p in operation.get("parameters", []):
        if p["in"] != place:
            continue
        s = dict(p["schema"])
        if "description" in p:
            s["description"] = p["description"]
        props[p["name"]] = s
        if p.get("required"):
            required.append(p["name"])
    schema["properties"] = props
    if required:
        schema["required"] = required
    return schema


def expected_input(doc, operation):
    """A tool's arguments: the body's object, or an object of the query parameters, and the path parameters."""
    components = doc["components"]["schemas"]
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body is not None:
        schema = resolve(body, components)
        alternatives = schema.get("anyOf") or schema.get("oneOf")
        if alternatives:
            objects = [a for a in alternatives if a.get("type") != "array"]
            if len(objects) == 1:
                schema = objects[0]
        return resolve(with_parameters(schema, operation, "path"), components)
    out = with_parameters({"type": "object", "properties": {}}, operation, "path")
    out = with_parameters(out, operation, "query")
    out["additionalProperties"] = False
    return resolve(out, components)


def outcome(result):
    text = result.content[0].text if result.content else ""
    return {"is_error": bool(result.is_error), "text": text, "structured": result.structured_content}


async def session(client, doc, everything):
    seen = {}
    listed = (await client.list_tools()).tools
    operations = {op["operationId"]: op for item in doc["paths"].values() for op in item.values()}
    seen["tools"] = [
        {"name": t.name, "read_only": t.annotations.read_only_hint, "destructive": t.annotations.destructive_hint,
         "described": len(t.description or "") > 80}
        for t in listed
    ]
    seen["calculate"] = outcome(await client.call_tool("calculate_tax", CALCULATE))
    if everything:
        by_title = {op.get("summary"): op for op in operations.values()}
        seen["schemas_equal"] = {
            t.name: resolve(t.input_schema, t.input_schema.get("$defs", {})) == expected_input(doc, by_title[t.title])
            for t in listed
        }
        # The corrections take the transaction just recorded: a tenth of it refunded, the transaction read with its
        # refund, then it voided with the refund.
        tx = seen["calculate"]["structured"]["transaction_id"]
        examples = dict(EXAMPLES, refund_transaction={"transaction_id": tx, "amount": 100, "reason": "one seat returned"},
                        get_transaction={"transaction_id": tx}, void_transaction={"transaction_id": tx})
        seen["calls"] = {name: outcome(await client.call_tool(name, args)) for name, args in examples.items()}
        seen["malformed"] = outcome(await client.call_tool("calculate_tax", dict(CALCULATE, amount="ten", buyer_state="XX")))
        seen["unknown_tool"] = outcome(await client.call_tool("file_return", {}))
    return seen


async def main():
    _, signup = rest("POST", "/api/v1/auth/signup", body={
        "email": "mcp@example.com", "password": "correct horse battery", "agent_name": "mcp agent",
        "agent_work_type": "compute"})
    key = json.loads(signup)["api_key"]["key"]
    status, _ = rest("POST", "/api/v1/nexus", key, {"nexus": {"TX": {"hasNexus": True}}})
    assert status == 200, status
    out = {}
    out["rest_calculate"] = rest("POST", "/api/v1/calculate", key, CALCULATE)[1]
    doc = json.loads(rest("GET", "/api/v1/openapi.json")[1])

    headers = {"x-api-key": key}
    async with Client(streamable_http_client(BASE + "/mcp", http_client=httpx2.AsyncClient(headers=headers))) as c:
        out["http"] = await session(c, doc, True)
    async with Client(streamable_http_client(BASE + "/mcp")) as c:
        out["http_keyless"] = {
            "get_nexus": outcome(await c.call_tool("get_nexus", {})),
            "get_local_rate": outcome(await c.call_tool("get_local_rate", {"zip": "78701"})),
        }
    params = StdioServerParameters(command=LEVY, args=["mcp", "--url", BASE], env={"LEVY_API_KEY": key})
    async with Client(params) as c:
        out["stdio"] = await session(c, doc, False)
    params = StdioServerParameters(command=LEVY, args=["mcp", "--url", BASE], env={"LEVY_API_KEY": ""})
    async with Client(params) as c:
        out["stdio_keyless"] = {"get_nexus": outcome(await c.call_tool("get_nexus", {}))}
    # Nothing listens on port 9 of loopback: the call never reaches a levy server.
    params = StdioServerParameters(command=LEVY, args=["mcp", "--url", "http://127.0.0.1:9"], env={"LEVY_API_KEY": key})
    async with Client(params) as c:
        out["stdio_unreachable"] = {"check_health": outcome(await c.call_tool("check_health", {}))}
    print(json.dumps(out))


asyncio.run(main())
