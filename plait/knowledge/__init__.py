"""Knowledge bases' pure parts: parsing documents, chunking them under a token bound, embedding, rank fusion.
No storage here."""
