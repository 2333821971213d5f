import { render } from "preact";
import { App } from "./App";
import { interceptLinks } from "./router";
import "./app.css";

const root = document.getElementById("app")!;
interceptLinks(root);
render(<App />, root);
