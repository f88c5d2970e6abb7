"""The one pipeline every model request goes through, after its ingress: the exchange in
parts, the attempts, the upstream request of each kind, the reply (relayed, forwarded or
converted), the session's kept turns, and the usage record."""
