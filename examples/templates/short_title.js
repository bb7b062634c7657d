// A user prompt-script template for examples/prompt_templates.yaml: store it with
//   plait templates create short_title --file examples/templates/short_title.js --category titles
async function main() {
  const summary = await getVar("summarise.summary");
  const words = summary.split(/\s+/).length;
  console.log("the summary has", words, "words");
  const hint = await getSchemaHint("output");
  return `Give this summary a title of at most six words.\n${hint}\n\nSummary:\n${summary}`;
}
