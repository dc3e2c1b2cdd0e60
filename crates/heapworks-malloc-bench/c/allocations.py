"""Allocation-heavy Python for `heapworks bench --malloc`, run with PYTHONMALLOC=malloc so that
every object goes through the C malloc: records built, written to JSON and read back, scanned
with a regular expression, indexed, sorted and joined. The first argument sets the number of
records. Prints a digest that does not depend on the allocator."""

import collections
import json
import re
import sys

n = int(sys.argv[1])
records = [
    {
        "id": i,
        "name": f"item-{i * 7919 % n}",
        "tags": [str(i % k) for k in range(1, i % 9 + 2)],
        "score": (i * 2654435761 % 1000003) / 7.0,
    }
    for i in range(n)
]
text = json.dumps(records)
back = json.loads(text)
names = collections.Counter(re.findall(r"item-\d+", text))
index = {record["name"]: record for record in back}
lines = sorted(
    (f"{record['score']:012.3f} {record['name']} {','.join(record['tags'])}" for record in back),
    reverse=True,
)
joined = [" | ".join(lines[i : i + 50]) for i in range(0, len(lines), 50)]
print(len(text), len(index), names.most_common(2), lines[:2], sum(map(len, joined)))
