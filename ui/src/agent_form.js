// What the agent and project forms decide without the page (views/agent_settings.jsx), so
// that node tests them (tests/browser/page/agent_form.test.mjs).

// "allowed_hosts[2]" → "allowed_hosts": the form's field a list entry belongs to.
export function form_field(field) {
  return field ? field.replace(/\[\d+\]$/, '') : null;
}

// An API error as {field: message} for the form's `fields`, or {'': message} (the top of the
// form) when it names none of them.
export function errors_of(error, fields) {
  const field = form_field(error?.field ?? null);
  const message = error?.message ?? String(error);
  return field && fields.includes(field) ? { [field]: message } : { '': message };
}

// A textarea's lines as a list: trimmed, empty ones dropped.
export const lines = (text) => text.split('\n').map((line) => line.trim()).filter(Boolean);

const context_words = (context) => context ?? 'no context';

// The accounts a project's agents may use: those of its own context, untagged with untagged
// (the API's rule; another is refused with 409). The others come with the reason.
export function accounts_for(project, accounts) {
  const offered = [];
  const refused = [];
  for (const account of accounts) {
    if ((account.context ?? null) === (project.context ?? null)) offered.push(account);
    else refused.push({ account, why: `belongs to ${context_words(account.context)}; this project ${project.context ? `is ${project.context}` : 'has no context'}` });
  }
  return { offered, refused };
}
