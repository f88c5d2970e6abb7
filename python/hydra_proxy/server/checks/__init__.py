"""What a request must pass before it is answered: the concurrency admission, the limits
on what a client sends, a named key's checks, the browser guard."""
