// Stock-client state (no forwardedProps.stateVersion), text sent with a resume, and discovery.
export default ({ BASE, TOKEN, HttpAgent, randomUUID, recordingFetch, expect, ofType, userMessage, run, finished,
  interrupted, toolResult, text, control }) => {
  const recipeAgent = () => new HttpAgent({
    url: `${BASE}/agui/recipe`, threadId: `thread-${randomUUID()}`,
    headers: { Authorization: `Bearer ${TOKEN}` }, fetch: recordingFetch,
  });
  const notices = (result) => ofType(result.events, "CUSTOM").filter((e) => e.name === "state_not_applied");

  return {
    state_without_version: async () => {
      const agent = recipeAgent();
      agent.addMessage(userMessage("I want to make a classic Italian pasta carbonara"));
      finished(await run(agent));
      expect(agent.state.recipe?.title, "the run's state reached the client", agent.state);
      // the person edits the state in the client and writes again: setState + runAgent, no version
      agent.setState({ recipe: { ...agent.state.recipe, cooking_time: "45 min" } });
      agent.addMessage(userMessage("Thanks!"));
      const edited = await run(agent);
      finished(edited);
      expect(notices(edited).length === 0, "the client's change is taken", notices(edited));
      expect(agent.state.recipe.cooking_time === "45 min", "and stays", agent.state);
      // the state changes elsewhere (the browser); the client's next message echoes its older state
      await control({ action: "set_title", threadId: agent.threadId, title: "From the browser" });
      agent.addMessage(userMessage("Thanks again!"));
      const echoed = await run(agent);
      finished(echoed);
      expect(notices(echoed).length === 0, "an echo is not an edit and is not refused", notices(echoed));
      expect(agent.state.recipe.title === "From the browser", "the server's state reached the client", agent.state);
      // a change made on a state that changed since: not applied, the run goes on and says why
      await control({ action: "set_title", threadId: agent.threadId, title: "Changed again" });
      agent.setState({ recipe: { ...agent.state.recipe, title: "Mine" } });
      agent.addMessage(userMessage("Thank you"));
      const stale = await run(agent);
      finished(stale);
      const [notice] = notices(stale);
      expect(notice && /not applied/.test(notice.value.message), "CUSTOM state_not_applied says why", stale.events);
      expect(agent.state.recipe.title === "Changed again", "the client ends on the server's state", agent.state);
      return { threadId: agent.threadId };
    },

    resume_with_text: async () => {
      const agent = new HttpAgent({
        url: `${BASE}/agui/banking/`, threadId: `thread-${randomUUID()}`,
        headers: { Authorization: `Bearer ${TOKEN}` }, fetch: recordingFetch,
      });
      const { interrupts: [it] } = await interrupted(agent, "Cancel my subscription sub_456");
      const more = userMessage("Also, which plan was it?");
      agent.addMessage(more);
      const resumed = await run(agent, { resume: [{ interruptId: it.id, status: "resolved", payload: { approved: true } }] });
      finished(resumed);
      expect(toolResult(resumed, it.toolCallId).content.includes("cancelled"), "the approved call ran first");
      expect(text(resumed).includes("It was the Basic plan."), "then the new text was answered", text(resumed));
      const roles = agent.messages.map((m) => m.role);
      const at = agent.messages.findIndex((m) => m.id === more.id);
      expect(at > 0 && roles[at - 1] === "tool" && roles.at(-1) === "assistant", "stored after the result", roles);
      return { threadId: agent.threadId, messageId: more.id };
    },

    capabilities: async () => {
      const res = await recordingFetch(`${BASE}/agui/banking`, { headers: { Authorization: `Bearer ${TOKEN}` } });
      expect(res.status === 200, "GET /agui/<agent> answers 200", res.status);
      const caps = await res.json();
      expect(caps.identity.name === "banking" && caps.humanInTheLoop.approvals === true, "AgentCapabilities", caps);
      expect(caps.tools.items.some((t) => t.name === "transfer_money"), "its tools", caps.tools);
      return { tools: caps.tools.items.length };
    },
  };
};
