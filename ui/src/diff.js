// A line diff of two texts, for the diffs of edits (ACP's {"type":"diff","oldText","newText"}).
// The longest common subsequence of lines, after taking off the common start and end; past a
// size where that table would be large, the middle shows as all removed then all added.
export function line_diff(oldText, newText) {
  const a = oldText === '' ? [] : oldText.split('\n');
  const b = newText === '' ? [] : newText.split('\n');
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length, endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA--; endB--; }
  const out = a.slice(0, start).map((text) => ({ op: 'same', text }));
  const midA = a.slice(start, endA), midB = b.slice(start, endB);
  if (midA.length * midB.length > 1_000_000) {
    for (const text of midA) out.push({ op: 'del', text });
    for (const text of midB) out.push({ op: 'add', text });
  } else {
    const n = midA.length, m = midB.length;
    const table = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        table[i][j] = midA[i] === midB[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && midA[i] === midB[j]) { out.push({ op: 'same', text: midA[i] }); i++; j++; }
      else if (i < n && (j >= m || table[i + 1][j] >= table[i][j + 1])) { out.push({ op: 'del', text: midA[i] }); i++; }
      else { out.push({ op: 'add', text: midB[j] }); j++; }
    }
  }
  for (const text of a.slice(endA)) out.push({ op: 'same', text });
  return out;
}
