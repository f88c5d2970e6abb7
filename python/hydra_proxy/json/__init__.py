"""JSON as the native core reads it (twins of rust/src/json/): `read`, the typed reads of
upstream events; `depth`, how deep a value nests and the deepest a request may carry."""
