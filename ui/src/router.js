// A hash router (routes.js says which fragment is which view). The fragment never reaches
// the server, so handlerd serves one page for every view.
import { useEffect, useState } from 'preact/hooks';
import { parse_route } from './routes.js';

export function useRoute() {
  const [route, setRoute] = useState(() => parse_route(location.hash));
  useEffect(() => {
    const update = () => setRoute(parse_route(location.hash));
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  return route;
}

export function go(hash) { location.hash = hash; }
