// The two Express majors are installed side by side under aliases; both match @types/express.
declare module 'express4' {
  import express = require('express');
  export = express;
}
declare module 'express5' {
  import express = require('express');
  export = express;
}
