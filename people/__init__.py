"""People's own settings that every page and mail reads: today, the language they chose."""
