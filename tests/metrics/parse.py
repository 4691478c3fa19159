"""Parses a Prometheus text exposition (stdin) with the official client's parser (PyPI prometheus-client) and prints
its families as JSON: [{name, type, help, samples: [{name, labels, value}]}]. An invalid exposition raises, and the
script exits non-zero."""

import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families

families = []
for family in text_string_to_metric_families(sys.stdin.read()):
    families.append(
        {
            "name": family.name,
            "type": family.type,
            "help": family.documentation,
            "samples": [
                {"name": s.name, "labels": s.labels, "value": None if math.isinf(s.value) else s.value}
                for s in family.samples
            ],
        }
    )
print(json.dumps(families))
