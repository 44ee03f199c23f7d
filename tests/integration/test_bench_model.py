"""The benchmark's model (bench/fake_llm_server.py) is a process of its own: it must answer the
offline demo script there too, which speaks the conversation's language through Django."""

from __future__ import annotations

import subprocess
import sys

from openai import OpenAI

from tests.integration.agui_stack import ROOT


def test_the_bench_model_answers_the_demo_script_in_its_own_process():
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "fake_llm_server.py"), "--port", "0"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("ready "), proc.stderr.read()
        client = OpenAI(base_url=line.split()[1], api_key="bench", max_retries=0)
        reply = client.chat.completions.create(model="fake-model", messages=[
            {"role": "user", "content": "What is my balance?"}])
        assert reply.choices[0].message.content
        streamed = client.chat.completions.create(model="fake-model", stream=True, messages=[
            {"role": "user", "content": "BENCH-STREAM 5"}])
        words = [c.choices[0].delta.content for c in streamed if c.choices and c.choices[0].delta.content]
        assert len(words) == 5
    finally:
        proc.kill()
        proc.wait()
