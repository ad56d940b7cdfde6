// Live totals on a draft (progressive enhancement: without JavaScript the totals show after saving).
// As a line form changes, the server computes what the line and the invoice would come to, with the
// same arithmetic as saving them, and the answer is shown under the form (announced politely).
document.querySelectorAll("form[data-preview]").forEach((form) => {
  const output = form.querySelector("[data-preview-output]");
  let timer;
  let asked = 0;
  form.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const question = ++asked;
      const fields = new URLSearchParams(new FormData(form));
      fields.set("line", form.dataset.line);
      try {
        const response = await fetch(form.dataset.preview, {method: "POST", body: fields, credentials: "same-origin"});
        const answer = await response.json();
        if (question === asked) output.textContent = answer.message || "";
      } catch (error) {
        if (question === asked) output.textContent = "";
      }
    }, 300);
  });
});
