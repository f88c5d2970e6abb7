"""Named client keys: one per member of a team, each with its budget, rate limits and model
rights, stored hashed in the usage ledger's database.

- `secret`: the secrets (``hk-`` + random) and their hashes;
- `record`: a key's and a team's limits as stored;
- `period`: the UTC budget periods (day, week, month);
- `store`: the key store, in the ledger's SQLite file or PostgreSQL database;
- `keyring`: the keys a worker checks requests against, refreshed from the store;
- `checks`: the checks on each request and their settlement through `counters.Counters`;
- `refusals`: the refusals, in the client's protocol;
- `alerts`: spend alerts, webhooks at thresholds of a budget, once per period;
- `admin`: the ``/admin/keys`` HTTP API; `cli`: ``hydra-proxy keys``;
- `service`: what a worker holds (`TeamKeys`), started after its fork.
"""
