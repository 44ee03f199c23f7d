// abortRun() mid-run (CopilotKit's Stop does the same): the client closes its stream while the
// model is still streaming, then sends a new message. The server stops the abandoned run (it
// ends cancelled in the stored history) and answers the new message after it, in order.
export default ({ newAgent, userMessage, run, finished, ofType, types, expect, text }) => ({
  abort: async () => {
    const agent = newAgent();
    agent.addMessage(userMessage("[long] Tell me everything about savings accounts"));
    // the reply streams for about ten seconds; the client gives up at its first piece
    const gone = await run(agent, {}, { onEvent: (e) => { if (e.type === "TEXT_MESSAGE_CONTENT") agent.abortRun(); } });
    expect(!gone.error, `an aborted run resolves quietly: ${gone.error?.message}`);
    const t = types(gone.events);
    expect(t.includes("TEXT_MESSAGE_CONTENT") && !t.includes("RUN_FINISHED"), "the client left mid-stream", t);
    // at once, a new message: no run_active, the answer to it
    agent.addMessage(userMessage("Just the short version, please"));
    const next = await run(agent);
    finished(next);
    expect(text(next) === "The short version: savings accounts earn interest.", "the new message is answered",
      text(next));
    const snapshot = ofType(next.events, "MESSAGES_SNAPSHOT")[0].messages;
    const stored = snapshot.map((m) => [m.role, (m.content || "").slice(0, 40)]);
    expect(JSON.stringify(stored.map(([role]) => role)) === JSON.stringify(["user", "assistant", "user"]),
      "the question, what the abandoned run said before it stopped, the new message", stored);
    expect(stored[0][1].startsWith("[long]") && stored[2][1] === "Just the short version, please", "in order", stored);
    return { abandonedRunId: gone.runId, runId: next.runId, threadId: agent.threadId };
  },
  // the client comes back while the answer still streams (a reload, a stream cut): runAgent() with
  // nothing new is relayed the live run after a MESSAGES_SNAPSHOT, which replaces the client's list;
  // it left out the question (the run's own user turn), so a first turn's list was emptied
  rejoin: async () => {
    const agent = newAgent();
    agent.addMessage(userMessage("[long] Tell me a long story"));
    const gone = await run(agent, {}, { onEvent: (e) => { if (e.type === "TEXT_MESSAGE_CONTENT") agent.abortRun(); } });
    expect(!gone.error, `an aborted run resolves quietly: ${gone.error?.message}`);
    const back = await run(agent);
    expect(!back.error && back.events[0].runId === gone.runId && types(back.events).at(-1) === "RUN_FINISHED",
      "the live run is relayed to its end", types(back.events));
    const held = agent.messages.map((m) => [m.role, (m.content || "").slice(0, 40)]);
    expect(JSON.stringify(held.map(([role]) => role)) === JSON.stringify(["user", "assistant"]),
      "the question and its answer", held);
    expect(held[0][1] === "[long] Tell me a long story", "the question is the client's own", held);
    return { runId: gone.runId, threadId: agent.threadId, answer: agent.messages[1].content };
  },
});
