// The two Koa majors are installed side by side under aliases; both match @types/koa.
declare module 'koa2' {
  import Koa = require('koa');
  export = Koa;
}
declare module 'koa3' {
  import Koa = require('koa');
  export = Koa;
}
