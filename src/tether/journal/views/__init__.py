"""Views over the journal: timelines, exports, policy what-if — derived from events alone, so
they can never disagree with the record and can never reach a tool."""
