"""The endpoints that are not model requests: probes, listings, token counts, metrics, the
Gemini API's other methods and the console."""
