import { render } from 'preact';

function App() {
  return <p>Handler</p>;
}

render(<App />, document.getElementById('app'));
