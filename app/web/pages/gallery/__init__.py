"""The gallery page: every puzzle as a card, filtered, sorted, selected and acted on in bulk."""
