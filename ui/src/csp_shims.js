// handlerd serves the page with a Content-Security-Policy of 'self' only: no inline <style>
// element and no style attribute string may be applied. xterm.js 6 uses both: it writes its
// measured cell sizes and its theme into <style> elements it creates, and the colours of
// 24-bit text with setAttribute('style', ...). The browser refuses those (and logs a CSP
// violation for each), which leaves the terminal mis-sized and colourless.
//
// Both have CSP-safe equivalents that do the same thing: a constructed stylesheet
// (document.adoptedStyleSheets) and the CSSOM (element.style.cssText). This module, imported
// before anything else, routes the two calls to them. The page's own code never makes a
// <style> element or a style attribute string (preact sets style objects through the CSSOM),
// so this changes nothing else, and it loosens no policy: no text from outside the page's
// own bundle becomes a stylesheet that was not one already.

const createElement = Document.prototype.createElement;
Document.prototype.createElement = function (tag, options) {
  if (typeof tag !== 'string' || tag.toLowerCase() !== 'style') return createElement.call(this, tag, options);
  // An inert element stands where the <style> would be (a <template> is never rendered);
  // its text goes into a constructed sheet, adopted by the document while the element lives.
  const stand_in = createElement.call(this, 'template');
  const sheet = new CSSStyleSheet();
  const document_ = this;
  let text = '';
  let adopted = false;
  Object.defineProperty(stand_in, 'textContent', {
    get: () => text,
    set: (value) => {
      text = value == null ? '' : String(value);
      sheet.replaceSync(text);
      if (!adopted) {
        document_.adoptedStyleSheets = [...document_.adoptedStyleSheets, sheet];
        adopted = true;
      }
    },
  });
  const remove = stand_in.remove;
  stand_in.remove = function () {
    remove.call(this);
    document_.adoptedStyleSheets = document_.adoptedStyleSheets.filter((s) => s !== sheet);
    adopted = false;
  };
  return stand_in;
};

const setAttribute = Element.prototype.setAttribute;
Element.prototype.setAttribute = function (name, value) {
  if (typeof name === 'string' && name.toLowerCase() === 'style' && this.style) {
    this.style.cssText = String(value);
    return;
  }
  setAttribute.call(this, name, value);
};
