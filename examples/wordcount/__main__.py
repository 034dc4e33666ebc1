import asyncio

from examples.wordcount.app import main

asyncio.run(main())
