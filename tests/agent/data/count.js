// forgets to require fs
const data = JSON.parse(fs.readFileSync("items.json", "utf8"));
console.log(`${data.length} records`);
