// Stylesheets are bundled by esbuild into the entry's .css file.
declare module '*.css';
