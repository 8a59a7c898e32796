// Progressive enhancement only: every page works without this file.
"use strict";

// Feedback buttons: send the report as JSON and answer in place, instead of a page load.
document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!form.classList || !form.classList.contains("feedback")) return;
  const button = event.submitter;
  if (!button || !button.value) return;
  event.preventDefault();
  const data = new FormData(form);
  const report = { entry: data.get("entry"), fix: data.get("fix"), outcome: button.value };
  for (const key of ["platform", "hardware", "version", "note"]) {
    const v = (data.get(key) || "").trim();
    if (v) report[key] = v;
  }
  for (const b of form.querySelectorAll("button")) b.disabled = true;
  const note = document.createElement("p");
  try {
    const response = await fetch("/api/v1/feedback", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(report),
    });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error ? body.error.message : response.statusText);
    note.className = "thanks";
    note.textContent = data.get("lang") === "zh" ? "谢谢，已记录你的反馈。" : "Thanks: your report is recorded.";
  } catch (err) {
    note.className = "error-message";
    note.textContent = "Could not record the report: " + err.message;
    for (const b of form.querySelectorAll("button")) b.disabled = false;
  }
  form.after(note);
});

// Drop a log file onto the diagnose form to read it into the text box.
const logBox = document.getElementById("log");
if (logBox) {
  const form = logBox.form;
  form.addEventListener("dragover", (e) => { e.preventDefault(); form.classList.add("dragover"); });
  form.addEventListener("dragleave", () => form.classList.remove("dragover"));
  form.addEventListener("drop", (e) => {
    e.preventDefault();
    form.classList.remove("dragover");
    const file = e.dataTransfer.files[0];
    if (file) file.text().then((text) => { logBox.value = text; });
  });
}
