"""recall-retrieval on its own: what it stores, what it answers, and when it says nothing was mentioned."""

from __future__ import annotations

from pytest_recall.agents.retrieval import NOT_MENTIONED, respond

SESSION = (
    "Below is a session.\n\n"
    "Chat session 1 of 2, held on 2023/05/20 (Sat) 02:21:\n"
    "user: I adopted a dog named Biscuit from the shelter. It was raining.\n"
    "assistant: Welcome home, Biscuit!\n\n"
    "Reply OK once you have stored what you need.\n"
)
OTHER = (
    "Session 2 of 2, held at 1:56 pm on 8 May, 2023:\n"
    "Ana: Je suis allée au café Über avec Zoë.\n\n"
    "Reply OK once you have stored what you need.\n"
)


def test_it_stores_sessions_and_answers_with_the_best_sentence_of_the_best_line(tmp_path):
    assert respond(SESSION, tmp_path) == "OK"
    assert respond(OTHER, tmp_path) == "OK"
    answer = respond("The current date is later.\n\nQuestion: What is my dog's name?\n", tmp_path)
    assert answer == "I adopted a dog named Biscuit from the shelter."
    # A question about when gets the session's date too.
    answer = respond("Question: When did I adopt my dog?\n", tmp_path)
    assert answer == "I adopted a dog named Biscuit from the shelter. (2023/05/20 (Sat) 02:21)"
    assert respond("Question: Où est le café?\n", tmp_path) == "Je suis allée au café Über avec Zoë."


def test_with_no_memory_or_no_match_it_says_not_mentioned(tmp_path):
    assert respond("Question: What is my dog's name?\n", tmp_path) == NOT_MENTIONED
    respond(SESSION, tmp_path)
    assert respond("Question: Which telescope do I own?\n", tmp_path) == NOT_MENTIONED
    assert respond("Question: What was it?\n", tmp_path) == NOT_MENTIONED
