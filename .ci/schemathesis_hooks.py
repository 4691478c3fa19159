"""schemathesis hooks for the contract step of .ci/run.

Every call schemathesis makes carries the API key. The calculate request documents two demo-only fields,
nexus_override and vendor_ytd_override: a keyed call that sends them is refused with a 400 naming them
(docs/decisions.md, "Demo-only fields on live calls"; the fields' descriptions in the document say so).
JSON Schema cannot tie a field to the absence of a credential, so keyed calls leave them out here, as a
client that follows the document does. Nothing else is filtered.
"""
import schemathesis

DEMO_ONLY = ("nexus_override", "vendor_ytd_override")
KEYED_WITH_CALCULATE_FIELDS = {("POST", "/api/v1/calculate"), ("POST", "/api/v1/transactions/ingest")}


def _records(body):
    if isinstance(body, dict):
        return [body]
    if isinstance(body, list):
        return [r for r in body if isinstance(r, dict)]
    return []


@schemathesis.hook
def filter_case(context, case):
    op = context.operation
    if op is None or (op.method.upper(), op.path) not in KEYED_WITH_CALCULATE_FIELDS:
        return True
    return not any(f in r for r in _records(case.body) for f in DEMO_ONLY)
