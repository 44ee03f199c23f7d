"""The demo prompts the offline model understands, per agent: the chat offers them as starters."""

STARTERS = {
    "banking": [
        "Transfer $500 from account 1234567890 to account 0987654321",
        "What's the balance of account 1234567890?",
        "Cancel my subscription sub_123",
    ],
    "ops": [
        "List the files",
        "Write 'hello' to notes.txt",
        "Delete old-notes.txt",
        "Delete /etc/hosts",
    ],
    "recipe": ["I want to make a classic Italian pasta carbonara", "Make it vegetarian", "Improve the recipe"],
    "planner": ["Plan a birthday party", "Add a step: buy candles", "I prefer short tasks in the morning"],
    "writer": ["Write a short document about remote work", "Revise it: add a conclusion"],
    "support": [
        "I want a refund for order 12345",
        "My order 12346 arrived damaged, please send a replacement",
        "I want a refund",
    ],
    "notes": ["Search the notes for lease", "Tag note 2 urgent", "Archive note 1", "Delete note 3"],
}
