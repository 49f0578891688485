"""Natural languages: which one a text is written in (:mod:`.detect`) and how each is analysed
for keyword search and the context (:mod:`.analyzers`)."""
