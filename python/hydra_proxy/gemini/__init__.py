"""Google Gemini API (``generateContent`` / ``streamGenerateContent``), in and out, in the
layout every protocol has (docs/ARCHITECTURE.md, "One layout per protocol").

Pure translation, no I/O: `request.reader` (a Gemini client's request -> the canonical
request), `request.writer` (canonical Anthropic Messages request -> Gemini request body,
path and headers), `response.reader` / `response.writer` (non-streamed
``GenerateContentResponse`` <-> Anthropic Message), `chunk`, `decoder`, `encoder`, `output`
(the ``streamGenerateContent?alt=sse`` stream, twins of rust/src/gemini/), `mapping`
(finish reasons and usage, shared by the stream and the non-streamed reader), `errors`
(Gemini HTTP error bodies -> the proxy's errors); and what only Gemini needs: `schema` (JSON
schema -> the subset Gemini accepts), `thought_signature` (Gemini ``thoughtSignature``s
carried through clients as proxy-signed thinking blocks).
"""
