"""Input for the python3 capture in traces/README.md: builds records, round-trips them
through JSON, and scans the text with regular expressions. Deterministic, about 0.05 s."""
import json
import re

records = [
    {
        "id": i,
        "name": f"user{i:05d}",
        "email": f"user{i}@example{i % 7}.org",
        "tags": [f"t{j}" for j in range(i % 5)],
        "score": (i * 7919) % 1000 / 10,
    }
    for i in range(300)
]
text = json.dumps(records, indent=1)
back = json.loads(text)
assert back == records
emails = re.findall(r"[\w.]+@(example\d)\.org", text)
domains = {}
for domain in emails:
    domains[domain] = domains.get(domain, 0) + 1
words = re.sub(r"[^a-z0-9]+", " ", text.lower()).split()
print(len(back), sorted(domains.items()), len(set(words)))
